/**
 * The snapshot feed's format (docs/feed.md) and its pure decoder: a `snapshot` body becomes an
 * OrgSnapshot built by the engine's own `buildSnapshot`, so that a consumer evaluates every flag
 * of the feed exactly as the server does; `applyFeedChange` brings a held body forward by one
 * `change` event, or says that the consumer missed one (a gap: reload the snapshot).
 *
 * Imports only the engine and the domain types, and nothing of node: the in-process provider
 * bundles this module.
 */
import type { Flag, FlagConfig, KillSwitchRule, Organization, Segment } from '../domain/types.js';
import { buildSnapshot, compileFlag, compileSegment, putFlag, type CompiledSegment, type OrgSnapshot } from './index.js';

/** The format this module reads and the server writes (`format` in every body and event). */
export const FEED_FORMAT = 1;

/** A flag of the feed: its record and its configurations for the feed's stage (every clientId). */
export interface FeedFlag {
  flag: Flag;
  configs: FlagConfig[];
}

/** What the engine reads of the organization. */
export interface FeedOrganization {
  id: string;
  /** Every environment, to resolve a requested stage to its spelling. */
  environments: string[];
  /** Every application, to tell which application a namespaced clientId names. */
  applications: string[];
  /** The kill-switch rules that can match a flag of the feed in its stage, in the organization's order. */
  killSwitch: KillSwitchRule[];
}

/** The `GET /sdk/v1/snapshot` body, and the data of a stream's `snapshot` event. */
export interface FeedSnapshot {
  format: typeof FEED_FORMAT;
  /** The organization's data version this body holds. */
  version: number;
  /** The stage, in the organization's spelling. */
  stage: string;
  /** The key's application. */
  application: string;
  organization: FeedOrganization;
  /** The application's flags and the parents of their dependencies (any application), by name. */
  flags: FeedFlag[];
  /** The segments the feed's rules name, by name. */
  segments: Segment[];
}

/** A stream's `change` event: only what changed; a missing field did not change. */
export interface FeedChange {
  format: typeof FEED_FORMAT;
  /** The version this change brings. */
  version: number;
  /** The version of the stream's previous event: a consumer that holds another reloads. */
  follows: number;
  organization?: FeedOrganization;
  /** Flags added or changed (whole entries). */
  flags?: FeedFlag[];
  /** Flags no longer in the feed (deleted, moved to another application, no longer a parent). */
  removedFlags?: string[];
  segments?: Segment[];
  removedSegments?: string[];
}

function checkFormat(json: unknown, what: string): asserts json is { format: number } {
  if (typeof json !== 'object' || json === null || (json as { format?: unknown }).format !== FEED_FORMAT) {
    throw new Error(`Not a format ${FEED_FORMAT} feed ${what}`);
  }
}

/** Checks a `snapshot` body (an object parsed from JSON) and returns it typed; throws when it is no format 1 body. */
export function readFeedSnapshot(json: unknown): FeedSnapshot {
  checkFormat(json, 'snapshot');
  const s = json as Partial<FeedSnapshot>;
  if (typeof s.version !== 'number' || typeof s.stage !== 'string' || typeof s.organization !== 'object' || !Array.isArray(s.flags) || !Array.isArray(s.segments)) {
    throw new Error('Malformed feed snapshot');
  }
  return s as FeedSnapshot;
}

/** The OrgSnapshot a feed body describes, compiled by the engine (src/engine/snapshot.ts). */
export function decodeFeed(json: unknown): OrgSnapshot {
  const feed = readFeedSnapshot(json);
  const o = feed.organization;
  const org: Organization = {
    id: o.id,
    name: '',
    // The server answers a feed only while the subscription is active.
    subscriptionActive: true,
    environments: o.environments,
    applications: o.applications,
    killSwitch: o.killSwitch,
    version: feed.version,
  };
  const configs = new Map<string, FlagConfig[]>();
  for (const f of feed.flags) configs.set(f.flag.name, f.configs);
  return buildSnapshot(
    org,
    feed.flags.map((f) => f.flag),
    configs,
    feed.segments,
  );
}

/**
 * The body `held` becomes with `change` applied; null when the change does not follow the version
 * held (a gap: reload the snapshot, docs/feed.md "Order and gaps"). `held` is not modified.
 */
export function applyFeedChange(held: FeedSnapshot, change: unknown): FeedSnapshot | null {
  checkFormat(change, 'change');
  const c = change as FeedChange;
  if (c.follows !== held.version) return null;
  return {
    ...held,
    version: c.version,
    organization: c.organization ?? held.organization,
    flags: merge(held.flags, c.flags, c.removedFlags, (f) => f.flag.name),
    segments: merge(held.segments, c.segments, c.removedSegments, (s) => s.name),
  };
}

/** A decoded feed: the body held and the OrgSnapshot compiled from it. */
export interface DecodedFeed {
  feed: FeedSnapshot;
  snapshot: OrgSnapshot;
}

/**
 * `held` brought forward by `change` (applyFeedChange), its snapshot changed in place as the
 * node's snapshot registry changes its own (docs/snapshots.md): only the flags and segments the
 * change carries are compiled again; a change of the organization rebuilds it. null on a gap, and
 * then `held` is untouched.
 */
export function applyFeedChangeDecoded(held: DecodedFeed, change: unknown): DecodedFeed | null {
  const feed = applyFeedChange(held.feed, change);
  if (feed === null) return null;
  const c = change as FeedChange;
  if (c.organization !== undefined) return { feed, snapshot: decodeFeed(feed) };
  const snapshot = held.snapshot;
  for (const name of c.removedFlags ?? []) snapshot.flags.delete(name);
  for (const f of c.flags ?? []) putFlag(snapshot, compileFlag(f.flag, f.configs));
  // decodeFeed's buildSnapshot always makes the segments a Map.
  const segments = snapshot.segments as Map<string, CompiledSegment>;
  for (const name of c.removedSegments ?? []) segments.delete(name);
  for (const s of c.segments ?? []) segments.set(s.name, compileSegment(s));
  snapshot.org = { ...snapshot.org, version: feed.version };
  return { feed, snapshot };
}

/** `list` with `put` replacing or adding by name and `removed` left out, sorted by name. */
function merge<T>(list: T[], put: T[] | undefined, removed: string[] | undefined, name: (x: T) => string): T[] {
  if (put === undefined && removed === undefined) return list;
  const byName = new Map<string, T>();
  for (const x of list) byName.set(name(x), x);
  for (const n of removed ?? []) byName.delete(n);
  for (const x of put ?? []) byName.set(name(x), x);
  return [...byName.keys()].sort(compareNames).map((n) => byName.get(n)!);
}

/** The feed's order of names: by UTF-16 code units, as the server sorts them. */
export const compareNames = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
