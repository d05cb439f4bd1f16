/**
 * Open OFREP event streams (docs/ofrep.md, 'The event stream'): every change the snapshot registry
 * applies sends `{"type": "refetchEvaluation"}` to the streams of the changed flag's application;
 * changes applied in the same turn make one event per stream. What every key's event stream needs
 * (the cap per key, ending the streams of a disabled, rotated or deleted key, the key re-check,
 * keep-alive comments, change batching) is evaluation/key-streams.ts. An idle stream is one small record
 * in two sets plus the front's socket.
 */
import { nameKey } from '../domain/name-matching.js';
import { KeyStreams, type EventSink, type KeyStream, type StreamLimits } from '../evaluation/key-streams.js';
import type { KeyCache } from '../auth/key-cache.js';
import type { SnapshotRegistry, Touches } from '../snapshots/registry.js';
import type { OrgSnapshot } from '../engine/index.js';
import type { Logger } from '../util/log.js';

interface OfrepStream extends KeyStream {
  /** The key's application's name key (domain/name-matching.ts). */
  app: string;
}

export const REFETCH_EVENT = 'data: {"type":"refetchEvaluation"}\n\n';

export class OfrepStreams {
  private readonly hub: KeyStreams<OfrepStream>;

  constructor(registry: SnapshotRegistry, keys: KeyCache, log: Logger, limits: StreamLimits) {
    this.hub = new KeyStreams(registry, keys, log, limits, deliver);
  }

  /** Open streams on this node. */
  get size(): number {
    return this.hub.size;
  }

  /** Whether `keyId` has as many open streams on this node as it may (one more is refused). */
  full(keyId: string): boolean {
    return this.hub.full(keyId);
  }

  /** Registers an open stream; false (and the stream is ended) past the key's cap. */
  add(sink: EventSink, orgId: string, keyId: string, application: string, hash: string): boolean {
    return this.hub.add({ sink, orgId, keyId, app: nameKey(application), hash });
  }

  close(): void {
    this.hub.close();
  }
}

/** One refetchEvaluation per stream whose application a change touched. */
function deliver(_orgId: string, snap: OrgSnapshot, touches: readonly Touches[], streams: ReadonlySet<OfrepStream>): void {
  const apps = touchedApplications(snap, touches);
  for (const s of streams) if (apps === 'all' || apps.has(s.app)) s.sink.write(REFETCH_EVENT);
}

/** The applications the changes touched (by name key), or 'all'. */
function touchedApplications(snap: OrgSnapshot, touches: readonly Touches[]): Set<string> | 'all' {
  const apps = new Set<string>();
  for (const t of touches) {
    if (typeof t !== 'object') return 'all';
    // A deleted flag's (segment's) application is no longer known, and an organization-wide
    // segment's flags may be of any application: tell every stream of the organization.
    const project = 'flag' in t ? snap.flags.get(t.flag)?.flag.project : snap.segments?.get(t.segment)?.segment.application;
    if (project == null) return 'all';
    apps.add(nameKey(project));
  }
  return apps;
}
