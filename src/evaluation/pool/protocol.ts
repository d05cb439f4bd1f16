/**
 * Messages between the front thread and the evaluation workers.
 *
 * Flag data is not sent at all: the front thread writes it once into shared memory
 * (src/snapshots/shared-store.ts) and a BroadcastChannel (one per node) carries only references to
 * that memory when an organization gets a fresh generation of it, and one small version
 * notification per change. Each evaluation item carries the snapshot version the front thread had
 * when it accepted the request; a worker that is behind answers that item "retry" (the front
 * thread hands it out again shortly, up to 2 s) and evaluates the rest of the batch at once, so a
 * node never answers from older data than it already served (read-your-writes holds through the
 * pool) and one organization never holds up another's answers.
 *
 * A batch crosses the thread boundary as one transferred byte buffer, not as a cloned object graph:
 * one JSON text per item, one item per line (JSON.stringify never writes a raw newline). Each item
 * is serialised on the front thread when it is submitted, so an input that cannot be serialised
 * (a context nested deeper than the stack allows) fails its own request there and never reaches a
 * worker. The answers come back the same way: one line per item, tagged by its first character.
 */
import type { Principal } from '../../auth/permissions.js';
import type { EvaluationAnswer } from '../../domain/types.js';

export type { StoreMessage } from '../../snapshots/shared-store.js';

export interface EvalItem {
  kind: 'eval';
  orgId: string;
  /** Minimum snapshot version the worker must hold. */
  version: number;
  flag: string;
  userId: string;
  stage: string;
  clientId: string | null;
  context: Record<string, unknown> | null;
}

/**
 * A GraphQL document whose operation only evaluates (see GraphQLExecutor.prepare): the worker
 * executes it against its replica and answers the serialised response.
 */
export interface GraphQLItem {
  kind: 'graphql';
  orgId: string;
  version: number;
  principal: Principal;
  query: string;
  operationName: string | null;
  variables: Record<string, unknown> | null;
}

/**
 * OFREP bulk after step 1 (evaluation/bulk.ts): the worker evaluates the flags named, the scope's
 * flags as the front thread listed them at `version` (a worker's view lists no flags), and
 * answers the evaluationSuccess answers joined with commas.
 */
export interface BulkItem {
  kind: 'bulk';
  orgId: string;
  version: number;
  flags: string[];
  /** A BulkRequest (evaluation/bulk.ts). */
  scope: { application: string; stage: string };
  userId: string;
  clientId: string | null;
  context: Record<string, unknown> | null;
}

/** A Principal as JSON carries it (its permission set as an array). */
export type SerialPrincipal = Omit<Principal, 'permissions'> & { permissions: string[] };

export type PoolItem = EvalItem | GraphQLItem | BulkItem;

/** A batch's answer may end with one more line: this prefix, then the JSON of the batch's insights rows (insights/counter.ts). */
export const INSIGHTS_LINE = 'I';
/** …and one more: this prefix, then the JSON of the batch's sampled contexts (samples/sampler.ts rows). */
export const SAMPLES_LINE = 'S';

/** One Piscina task: a batch of encoded items (`encodeItem` lines joined by '\n', UTF-8). */
export interface EvalTask {
  nowMs: number;
  items: Uint8Array;
}

export type PoolError = { error: 'NOT_FOUND' | 'INTERNAL'; message: string };
/**
 * An evaluation's answer, a serialised GraphQL response, OFREP bulk's answers, an error, or "not
 * yet: hand it out again". An evaluation travels as its answer only: the engine's `index` is for
 * the worker's own counters and is not sent (`encodeOutcome`).
 */
export type EvalOutcome = EvaluationAnswer | { graphql: string } | { bulk: string } | PoolError | { retry: true };

export interface WorkerData {
  channel: string;
  /** The node's per-reason evaluation counters (ops/eval-counts.ts), shared by every worker. */
  evalCounts: SharedArrayBuffer;
  /** VEXIL_INSIGHTS: count evaluations per flag; each batch's answer then ends with its counts (insights/counter.ts). */
  insights: boolean;
  /** VEXIL_CONTEXT_SAMPLE: contexts kept per flag and stage (0: off); a batch's answer may then end with the worker's samples. */
  contextSample: number;
  graphqlMaxDepth: number;
  graphqlMaxEvaluations: number;
  /** VEXIL_MAX_ANSWER_BYTES: the largest GraphQL answer a worker serialises (default 256 MiB). */
  maxAnswerBytes?: number;
  /** VEXIL_WORKER_FLAG_CACHE: compiled flags each worker keeps (least recently used go first). */
  flagCache: number;
}

// ------------------------------------------------------------------ encoding (pure)

/** One item as one line of JSON. Throws (RangeError) when the input nests deeper than the stack. */
export function encodeItem(item: PoolItem): string {
  if (item.kind === 'graphql') {
    return JSON.stringify({ ...item, principal: { ...item.principal, permissions: [...item.principal.permissions] } });
  }
  return JSON.stringify(item);
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Lines joined into one buffer of its own (transferable: never a slice of a shared pool). */
export const encodeLines = (lines: string[]): Uint8Array => encoder.encode(lines.join('\n'));

export const decodeLines = (buf: Uint8Array): string[] => {
  const text = decoder.decode(buf);
  return text === '' ? [''] : text.split('\n');
};

export function decodeItem(line: string): PoolItem {
  const item = JSON.parse(line) as PoolItem;
  if (item.kind === 'graphql') {
    const p = item.principal as unknown as SerialPrincipal;
    item.principal = { ...p, permissions: new Set(p.permissions) } as Principal;
  }
  return item;
}

/** Answer tags: the first character of each answer line. */
const TAG_EVAL = 'V';
const TAG_GRAPHQL = 'G';
const TAG_BULK = 'B';
const TAG_ERROR = 'E';
const TAG_RETRY = 'R';

export function encodeOutcome(o: EvalOutcome): string {
  if ('retry' in o) return TAG_RETRY;
  if ('error' in o) return TAG_ERROR + JSON.stringify(o);
  if ('graphql' in o) return TAG_GRAPHQL + o.graphql;
  if ('bulk' in o) return TAG_BULK + o.bulk;
  // The answer's fields by name: an Evaluation's `index` stays in the worker.
  return TAG_EVAL + JSON.stringify({ key: o.key, variant: o.variant, reason: o.reason });
}

export function decodeOutcome(line: string): EvalOutcome {
  const tag = line.charAt(0);
  if (tag === TAG_GRAPHQL) return { graphql: line.slice(1) };
  if (tag === TAG_BULK) return { bulk: line.slice(1) };
  if (tag === TAG_RETRY) return { retry: true };
  if (tag === TAG_EVAL || tag === TAG_ERROR) return JSON.parse(line.slice(1)) as EvalOutcome;
  return { error: 'INTERNAL', message: 'Malformed answer from an evaluation worker' };
}
