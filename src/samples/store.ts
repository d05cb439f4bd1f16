/**
 * The management actor's sampled contexts (CONTRACT 17, `VEXIL_CONTEXT_SAMPLE`; docs/change-requests.md,
 * "Sampled contexts"): what a change request's preview with `sample: true` evaluates.
 *
 * Every thread of the node sends its samples (sampler.ts rows) with its insights counts; the actor
 * keeps, per (organization, flag, stage), the N most recent **distinct** contexts (by userId and
 * clientId: a user evaluated again replaces its older sample and becomes the most recent). Memory
 * only: never logged, never stored, gone at a restart.
 *
 * Bounds (docs/limits.md, "Sampled contexts"): N per (flag, stage); a context longer than
 * MAX_SAMPLE_CONTEXT_CHARS is never kept; and all samples together at most `maxBytes` (counted as
 * the characters of userId, clientId and context JSON plus ENTRY_OVERHEAD each), past which the
 * oldest samples of the node go first.
 */
import { nameKey } from '../domain/name-matching.js';
import { SAMPLE_STRIDE, type ContextSampler, type SampleRows } from './sampler.js';

/** What one sample costs beyond its characters (its objects and map entries), in the byte count. */
export const ENTRY_OVERHEAD = 160;

export interface SampledContext {
  userId: string;
  clientId: string | null;
  context: Record<string, unknown> | null;
}

interface Entry {
  group: string;
  id: string;
  userId: string;
  clientId: string;
  context: string;
  bytes: number;
}

const groupKey = (orgId: string, flag: string, stage: string): string => `${orgId}\u0000${flag}\u0000${nameKey(stage)}`;

export class SampleStore {
  private readonly groups = new Map<string, Map<string, Entry>>();
  /** Every entry, oldest first (a Set keeps insertion order). */
  private readonly order = new Set<Entry>();
  private used = 0;

  constructor(
    readonly perStage: number,
    readonly maxBytes: number,
    /** The actor's own evaluations (a management GraphQL document may evaluate), drained before each read. */
    private readonly own: ContextSampler | null = null,
  ) {}

  /** Samples from a thread (sampler.ts rows, oldest first). */
  add(rows: SampleRows): void {
    for (let i = 0; i + SAMPLE_STRIDE <= rows.length; i += SAMPLE_STRIDE) {
      const group = groupKey(rows[i], rows[i + 1], rows[i + 2]);
      const userId = rows[i + 3];
      const clientId = rows[i + 4];
      const context = rows[i + 5];
      const id = `${userId}\u0000${clientId}`;
      let g = this.groups.get(group);
      if (g === undefined) {
        g = new Map();
        this.groups.set(group, g);
      }
      const old = g.get(id);
      if (old !== undefined) this.remove(old);
      const e: Entry = { group, id, userId, clientId, context, bytes: userId.length + clientId.length + context.length + ENTRY_OVERHEAD };
      g.set(id, e);
      this.order.add(e);
      this.used += e.bytes;
      if (g.size > this.perStage) this.remove(g.values().next().value as Entry);
      while (this.used > this.maxBytes && this.order.size > 0) this.remove(this.order.values().next().value as Entry);
    }
  }

  /** The samples of `flag` in `stage`, oldest first (at most `perStage`). */
  contexts(orgId: string, flag: string, stage: string): SampledContext[] {
    if (this.own !== null && this.own.pending) this.add(this.own.drain());
    const g = this.groups.get(groupKey(orgId, flag, stage));
    if (g === undefined) return [];
    return [...g.values()].map((e) => ({ userId: e.userId, clientId: e.clientId === '' ? null : e.clientId, context: e.context === '' ? null : (JSON.parse(e.context) as Record<string, unknown>) }));
  }

  /** Samples held, and the bytes they count for (tests, docs/limits.md). */
  get size(): number {
    return this.order.size;
  }
  get bytes(): number {
    return this.used;
  }

  private remove(e: Entry): void {
    const g = this.groups.get(e.group);
    if (g !== undefined && g.get(e.id) === e) {
      g.delete(e.id);
      if (g.size === 0) this.groups.delete(e.group);
    }
    this.order.delete(e);
    this.used -= e.bytes;
  }
}
