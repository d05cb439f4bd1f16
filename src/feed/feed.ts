/**
 * The snapshot feed's body, built from an organization's snapshot (docs/feed.md): what a consumer
 * needs to evaluate every flag of one application in one stage exactly as the server does, and
 * nothing else. Pure, no I/O.
 *
 * A feed is kept as parts, each serialised once: the organization's fields, and one JSON text per
 * flag and per segment. A flag's text is cached by its compiled object and stage, a segment's by
 * its compiled object (the registry compiles a new one only for what changed), and a whole feed by
 * the organization row and (application, stage) (a new row per version), so rebuilding a feed
 * after a change serialises only what changed, and the `change` event is the parts whose text
 * differs (`feedChange`).
 */
import { createHash } from 'node:crypto';
import { nameKey, sameName } from '../domain/name-matching.js';
import type { Flag, FlagConfig, KillSwitchRule, Organization, Segment } from '../domain/types.js';
import type { CompiledFlag, CompiledSegment, OrgSnapshot } from '../engine/index.js';
import { compareNames, FEED_FORMAT, type FeedFlag, type FeedOrganization } from '../engine/feed-decode.js';

/** A feed as its serialised parts. */
export interface FeedParts {
  version: number;
  stage: string;
  application: string;
  /** JSON of the FeedOrganization. */
  organization: string;
  /** JSON of each FeedFlag, by name, sorted by name. */
  flags: Map<string, string>;
  /** JSON of each Segment, by name, sorted by name. */
  segments: Map<string, string>;
  /** Every segment name the feed's rules name, whether the organization holds it or not. */
  named: ReadonlySet<string>;
}

// ---- records as the feed carries them: fixed fields in a fixed order, whatever built them ------------

const flagRecord = (f: Flag): Flag => ({
  name: f.name,
  project: f.project,
  type: f.type,
  description: f.description,
  tags: f.tags,
  isArchived: f.isArchived,
  variants: f.variants.map((v) => ({ key: v.key, value: v.value, valueType: v.valueType })),
  environments: f.environments,
  dependencies: f.dependencies.map((d) => ({ flag: d.flag, variants: d.variants })),
  createdAt: f.createdAt,
  updatedAt: f.updatedAt,
});

const configRecord = (c: FlagConfig): FlagConfig => ({
  stage: c.stage,
  clientId: c.clientId,
  enabled: c.enabled,
  defaultVariantKey: c.defaultVariantKey,
  rolloutPercentage: c.rolloutPercentage,
  rules: (c.rules ?? []).map((r) => ({
    id: r.id,
    priority: r.priority,
    conditions: r.conditions.map((x) => ({ field: x.field, operator: x.operator, value: x.value })),
    segments: r.segments ?? [],
    allocations: r.allocations.map((a) => ({ variantKey: a.variantKey, percentage: a.percentage })),
  })),
  activeFrom: c.activeFrom,
  activeUntil: c.activeUntil,
  enrollmentCutoff: c.enrollmentCutoff,
});

const segmentRecord = (s: Segment): Segment => ({
  name: s.name,
  description: s.description,
  application: s.application,
  conditions: s.conditions.map((x) => ({ field: x.field, operator: x.operator, value: x.value })),
  createdAt: s.createdAt,
  updatedAt: s.updatedAt,
});

// ---- per-object caches ------------------------------------------------------------------------------

/** A flag's configurations for a stage (the same name), base first, then by clientId. */
function stageConfigs(cf: CompiledFlag, stage: string): FlagConfig[] {
  const out: FlagConfig[] = [];
  for (const c of cf.configs.values()) if (sameName(c.config.stage, stage)) out.push(c.config);
  return out.sort((a, b) => (a.clientId === b.clientId ? 0 : a.clientId === null ? -1 : b.clientId === null ? 1 : compareNames(a.clientId, b.clientId)));
}

const flagTexts = new WeakMap<CompiledFlag, Map<string, string>>();

function flagText(cf: CompiledFlag, stage: string): string {
  let byStage = flagTexts.get(cf);
  if (byStage === undefined) flagTexts.set(cf, (byStage = new Map()));
  const key = nameKey(stage);
  let text = byStage.get(key);
  if (text === undefined) {
    const entry: FeedFlag = { flag: flagRecord(cf.flag), configs: stageConfigs(cf, stage).map(configRecord) };
    byStage.set(key, (text = JSON.stringify(entry)));
  }
  return text;
}

const segmentTexts = new WeakMap<CompiledSegment, string>();

function segmentText(cs: CompiledSegment): string {
  let text = segmentTexts.get(cs);
  if (text === undefined) segmentTexts.set(cs, (text = JSON.stringify(segmentRecord(cs.segment))));
  return text;
}

const feeds = new WeakMap<Organization, Map<string, FeedParts>>();

// ---- the feed ---------------------------------------------------------------------------------------

/**
 * The feed of `application` in `stage` (the organization's spelling) at the snapshot's version:
 * the application's flags, the parents of their dependencies (recursively, any application), the
 * segments their rules in the stage name, and the kill-switch rules that can match one of them in
 * the stage (docs/feed.md, "The snapshot").
 */
export function feedParts(snap: OrgSnapshot, application: string, stage: string): FeedParts {
  const org = snap.org;
  let byScope = feeds.get(org);
  if (byScope === undefined) feeds.set(org, (byScope = new Map()));
  const scope = nameKey(application) + '\u0000' + stage;
  let parts = byScope.get(scope);
  if (parts === undefined) byScope.set(scope, (parts = buildParts(snap, application, stage)));
  return parts;
}

function buildParts(snap: OrgSnapshot, application: string, stage: string): FeedParts {
  // The application's flags, then the parents of dependencies, breadth first.
  const included = new Map<string, CompiledFlag>();
  const queue: CompiledFlag[] = [];
  for (const cf of snap.flags.values()) {
    if (sameName(cf.flag.project, application)) {
      included.set(cf.flag.name, cf);
      queue.push(cf);
    }
  }
  for (let i = 0; i < queue.length; i++) {
    for (const dep of queue[i].flag.dependencies) {
      const parent = snap.flags.get(dep.flag);
      if (parent !== undefined && !included.has(dep.flag)) {
        included.set(dep.flag, parent);
        queue.push(parent);
      }
    }
  }
  const names = [...included.keys()].sort(compareNames);
  const flags = new Map<string, string>();
  const segmentNames = new Set<string>();
  for (const name of names) {
    const cf = included.get(name)!;
    flags.set(name, flagText(cf, stage));
    for (const c of stageConfigs(cf, stage)) for (const r of c.rules ?? []) for (const s of r.segments ?? []) segmentNames.add(s);
  }
  const segments = new Map<string, string>();
  for (const name of [...segmentNames].sort(compareNames)) {
    const cs = snap.segments?.get(name);
    if (cs !== undefined) segments.set(name, segmentText(cs));
  }
  const organization: FeedOrganization = {
    id: snap.org.id,
    environments: snap.org.environments,
    applications: snap.org.applications,
    killSwitch: snap.org.killSwitch.filter((r) => canMatch(r, stage, included)).map((r) => ({ flag: r.flag ?? null, application: r.application ?? null, environment: r.environment ?? null })),
  };
  return { version: snap.org.version, stage, application, organization: JSON.stringify(organization), flags, segments, named: segmentNames };
}

/**
 * Whether a kill-switch rule can match a flag of the feed in its stage (the engine's test,
 * src/engine/engine.ts): rules that cannot are left out, which keeps the first match of every
 * evaluation the same.
 */
function canMatch(rule: KillSwitchRule, stage: string, flags: Map<string, CompiledFlag>): boolean {
  if (rule.environment != null && !sameName(rule.environment, stage)) return false;
  const app = rule.application;
  if (rule.flag != null) {
    const cf = flags.get(rule.flag);
    return cf !== undefined && (app == null || sameName(app, cf.flag.project));
  }
  if (app == null) return true;
  for (const cf of flags.values()) if (sameName(app, cf.flag.project)) return true;
  return false;
}

const joinValues = (m: Map<string, string>): string => [...m.values()].join(',');

const bodies = new WeakMap<FeedParts, string>();

/** The JSON body of a feed (`GET /sdk/v1/snapshot`, a stream's `snapshot` event), built once per feed. */
export function feedBody(parts: FeedParts): string {
  let body = bodies.get(parts);
  if (body === undefined) bodies.set(parts, (body = buildBody(parts)));
  return body;
}

function buildBody(parts: FeedParts): string {
  return (
    `{"format":${FEED_FORMAT},"version":${parts.version},"stage":${JSON.stringify(parts.stage)},"application":${JSON.stringify(parts.application)},` +
    `"organization":${parts.organization},"flags":[${joinValues(parts.flags)}],"segments":[${joinValues(parts.segments)}]}`
  );
}

const etags = new WeakMap<FeedParts, string>();

/**
 * The feed's ETag: a weak validator over its content without `version` (a change to another
 * application moves the version, not the content), the same on every node for the same data.
 */
export function feedEtag(parts: FeedParts): string {
  let tag = etags.get(parts);
  if (tag === undefined) {
    const h = createHash('sha256');
    h.update(`feed${FEED_FORMAT}\u0000${parts.stage}\u0000${nameKey(parts.application)}\u0000${parts.organization}\u0000`);
    for (const t of parts.flags.values()) h.update(t).update('\u0000');
    h.update('\u0001');
    for (const t of parts.segments.values()) h.update(t).update('\u0000');
    tag = 'W/"' + h.digest('base64url').slice(0, 27) + '"';
    etags.set(parts, tag);
  }
  return tag;
}

/** The parts of `next` whose text differs from `prev`, and the names `prev` has and `next` has not. */
function diff(prev: Map<string, string>, next: Map<string, string>): { put: string[]; removed: string[] } {
  const put: string[] = [];
  const removed: string[] = [];
  for (const [name, text] of next) if (prev.get(name) !== text) put.push(text);
  for (const name of prev.keys()) if (!next.has(name)) removed.push(name);
  return { put, removed };
}

/**
 * The JSON of the `change` event that brings a consumer holding `prev` to `next`: only what
 * differs, with `next`'s version and the `prev` version it follows; null when nothing differs.
 */
export function feedChange(prev: FeedParts, next: FeedParts): string | null {
  const fields: string[] = [];
  if (prev.organization !== next.organization) fields.push(`"organization":${next.organization}`);
  const f = diff(prev.flags, next.flags);
  if (f.put.length > 0) fields.push(`"flags":[${f.put.join(',')}]`);
  if (f.removed.length > 0) fields.push(`"removedFlags":${JSON.stringify(f.removed)}`);
  const s = diff(prev.segments, next.segments);
  if (s.put.length > 0) fields.push(`"segments":[${s.put.join(',')}]`);
  if (s.removed.length > 0) fields.push(`"removedSegments":${JSON.stringify(s.removed)}`);
  if (fields.length === 0) return null;
  return `{"format":${FEED_FORMAT},"version":${next.version},"follows":${prev.version},${fields.join(',')}}`;
}
