/**
 * Open snapshot-feed streams (docs/feed.md, "The stream"): a `snapshot` event when a stream opens,
 * then a `change` event whenever the feed of its (application, stage) changes, carrying only the
 * parts that changed, with the version it brings and the version it follows. Streams of the same
 * organization, application and stage share one group: its feed is rebuilt once per change
 * (feed.ts serialises only what changed) and one event text goes to all of them. The cap per key,
 * ending the streams of a disabled, rotated or deleted key, the key re-check, keep-alive comments
 * and change batching are evaluation/key-streams.ts, shared with OFREP's streams.
 */
import { KeyStreams, type EventSink, type KeyStream, type StreamLimits } from '../evaluation/key-streams.js';
import type { KeyCache } from '../auth/key-cache.js';
import type { OrgSnapshot } from '../engine/index.js';
import { nameKey, sameName } from '../domain/name-matching.js';
import type { SnapshotRegistry, Touches } from '../snapshots/registry.js';
import type { Logger } from '../util/log.js';
import { feedBody, feedChange, feedParts, type FeedParts } from './feed.js';

/** The streams of one organization, application and stage, and the feed they all hold. */
interface Group {
  id: string;
  application: string;
  stage: string;
  /** The feed as last sent: a change event is the difference from it. */
  parts: FeedParts;
  streams: Set<FeedStream>;
}

interface FeedStream extends KeyStream {
  group: Group;
}

/** Who a stream belongs to and what it follows. */
export interface FeedStreamTarget {
  orgId: string;
  keyId: string;
  /** The key's stored hash (a rotation changes it). */
  hash: string;
  /** In the organization's spelling. */
  application: string;
  stage: string;
}

export const sseEvent = (event: string, data: string): string => `event: ${event}\ndata: ${data}\n\n`;

export class FeedStreams {
  private readonly hub: KeyStreams<FeedStream>;
  private readonly groups = new Map<string, Group>();

  constructor(registry: SnapshotRegistry, keys: KeyCache, log: Logger, limits: StreamLimits) {
    this.hub = new KeyStreams(registry, keys, log, limits, (_orgId, snap, touches, streams) => this.deliver(snap, touches, streams));
  }

  get size(): number {
    return this.hub.size;
  }

  full(keyId: string): boolean {
    return this.hub.full(keyId);
  }

  /**
   * Registers an open stream and sends it its `snapshot` event. Changes applied but not yet
   * delivered go to the group's streams first, so the new stream's snapshot is the version the
   * group's next change follows.
   */
  open(sink: EventSink, target: FeedStreamTarget, snap: OrgSnapshot): void {
    this.hub.flushOrg(target.orgId);
    const id = `${target.orgId}\u0000${nameKey(target.application)}\u0000${target.stage}`;
    let group = this.groups.get(id);
    if (group === undefined) {
      group = { id, application: target.application, stage: target.stage, parts: feedParts(snap, target.application, target.stage), streams: new Set() };
    }
    const s: FeedStream = { sink, orgId: target.orgId, keyId: target.keyId, hash: target.hash, group };
    if (!this.hub.add(s)) return;
    this.groups.set(id, group);
    group.streams.add(s);
    const g = group;
    sink.onClose(() => {
      g.streams.delete(s);
      if (g.streams.size === 0 && this.groups.get(g.id) === g) this.groups.delete(g.id);
    });
    sink.write(sseEvent('snapshot', feedBody(group.parts)));
  }

  close(): void {
    this.hub.close();
  }

  /**
   * Each group of the organization the changes may concern: its feed now, and a change event when
   * it differs from what was sent.
   */
  private deliver(snap: OrgSnapshot, touches: readonly Touches[], streams: ReadonlySet<FeedStream>): void {
    const done = new Set<Group>();
    for (const s of streams) {
      const g = s.group;
      if (done.has(g)) continue;
      done.add(g);
      if (!touches.some((t) => mayAlter(g.parts, g.application, snap, t))) continue;
      const next = feedParts(snap, g.application, g.stage);
      const change = feedChange(g.parts, next);
      if (change === null) continue;
      g.parts = next;
      const event = sseEvent('change', change);
      for (const member of g.streams) member.sink.write(event);
    }
  }
}

/**
 * Whether what a version touched may change a feed (`parts`, of `application`), so that a change
 * elsewhere (another application's flag that no flag of the feed depends on, a segment no rule of
 * the feed names) costs no rebuild. The organization's settings, or anything, always may.
 */
function mayAlter(parts: FeedParts, application: string, snap: OrgSnapshot, t: Touches): boolean {
  if (typeof t !== 'object') return true;
  if ('segment' in t) return parts.named.has(t.segment);
  if (parts.flags.has(t.flag)) return true;
  const cf = snap.flags.get(t.flag);
  if (cf === undefined) return false;
  if (sameName(cf.flag.project, application)) return true;
  // A flag of another application enters the feed when a flag of it depends on it.
  for (const name of parts.flags.keys()) if (snap.flags.get(name)?.flag.dependencies.some((d) => d.flag === t.flag)) return true;
  return false;
}
