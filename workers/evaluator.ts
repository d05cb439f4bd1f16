/**
 * Evaluation worker (Piscina). Reads every organization's flag data from the node's shared store
 * (src/snapshots/shared-store.ts: written once by the front thread, read by every worker; the
 * BroadcastChannel brings only references to its memory and version notifications), compiles a
 * flag when first asked for it into a bounded cache (VEXIL_WORKER_FLAG_CACHE), and runs batches of
 * work against it: single evaluations through the evaluation stage's `runEvaluation` (the engine,
 * counted), OFREP bulk through its `bulkAnswers`, and evaluation-only GraphQL documents
 * (compiled once per worker and document, like on the front thread).
 *
 * A batch arrives as one buffer of encoded items and leaves as one buffer of encoded answers
 * (src/evaluation/pool/protocol.ts). Every item is answered on its own: an item whose organization is behind
 * the version it needs is answered "retry" at once (the front thread hands it out again), an item
 * that fails is answered with its own error; neither holds up or changes the other items' answers.
 */
import { BroadcastChannel, workerData } from 'node:worker_threads';
import { move } from 'piscina';
import type { CompiledFlag, OrgSnapshot } from '../src/engine/index.js';
import { bulkAnswers } from '../src/evaluation/bulk.js';
import { runEvaluation } from '../src/evaluation/run.js';
import { SharedStoreReader, type StoreMessage } from '../src/snapshots/shared-store.js';
import {
  decodeItem,
  decodeLines,
  encodeLines,
  encodeOutcome,
  type BulkItem,
  type EvalItem,
  type EvalOutcome,
  type EvalTask,
  type GraphQLItem,
  type WorkerData,
  INSIGHTS_LINE,
  SAMPLES_LINE,
} from '../src/evaluation/pool/protocol.js';
import { GraphQLExecutor } from '../src/graphql/execute.js';
import type { EvaluationEnv, GraphQLContext } from '../src/graphql/evaluation-resolvers.js';
import { EvalCounts } from '../src/ops/eval-counts.js';
import { createLogger } from '../src/util/log.js';

const config = workerData as WorkerData;
const store = new SharedStoreReader(config.flagCache);
const channel = new BroadcastChannel(config.channel);
// Evaluations this worker serves count into the node's shared cells (kept across worker restarts).
const evalCounts = new EvalCounts(config.evalCounts, config.insights, config.contextSample);
// Kept referenced for the worker's lifetime: references and versions arrive on it between tasks.
(globalThis as { vexilSnapshotChannel?: BroadcastChannel }).vexilSnapshotChannel = channel;
const log = createLogger('warn', { thread: 'evaluation-worker' });
const graphql = new GraphQLExecutor(log, {
  maxDepth: config.graphqlMaxDepth,
  maxEvaluations: config.graphqlMaxEvaluations,
  ...(config.maxAnswerBytes !== undefined ? { maxAnswerBytes: config.maxAnswerBytes } : {}),
});

// What the front thread posts: references to an organization's shared memory and the versions it
// holds. The front thread applies every change (apply-rules.ts); a worker only reads, and answers
// an item only at a version it was told about (OrgView.serves, the same rules). 'hello' asks for
// the current references.
channel.onmessage = (ev: unknown) => store.receive((ev as { data: StoreMessage }).data);
channel.postMessage({ type: 'hello' } satisfies StoreMessage);

function evaluateOne(snap: OrgSnapshot, it: EvalItem, nowMs: number): EvalOutcome {
  const flag = snap.flags.get(it.flag);
  if (flag === undefined) return { error: 'NOT_FOUND', message: `Flag '${it.flag}' not found` };
  return runEvaluation(snap, flag, { userId: it.userId, stage: it.stage, clientId: it.clientId, context: it.context }, nowMs, evalCounts);
}

function evaluateBulk(snap: OrgSnapshot, it: BulkItem, nowMs: number): EvalOutcome {
  const flags: CompiledFlag[] = [];
  for (const name of it.flags) {
    const cf = snap.flags.get(name);
    if (cf !== undefined) flags.push(cf);
  }
  return { bulk: bulkAnswers(snap, flags, it, nowMs, evalCounts) };
}

async function executeGraphQL(snap: OrgSnapshot, it: GraphQLItem, nowMs: number): Promise<EvalOutcome> {
  const p = graphql.prepare(it.query, it.operationName);
  if (!p.ok) return { graphql: JSON.stringify({ errors: p.errors }) };
  // All the `evaluate` field reads: the shared store's view, the request's clock, the counters.
  const env: EvaluationEnv = { peek: (orgId) => store.view(orgId)?.snapshot, now: () => nowMs, evalCounts };
  const ctx: GraphQLContext = { env, rt: null, auth: { principal: it.principal, snapshot: snap }, deferredAny: p.deferredAny };
  const out = await graphql.run(p, ctx, it.variables);
  return { graphql: typeof out === 'string' ? out : out.toString('utf8') };
}

const internal = (err: unknown): EvalOutcome => {
  log.error('evaluation failed in a worker', { err: err as Error });
  return { error: 'INTERNAL', message: 'Unexpected server error' };
};

/** One item's answer; never throws (a failure is this item's own error). */
function answer(line: string, nowMs: number): EvalOutcome | Promise<EvalOutcome> {
  try {
    const it = decodeItem(line);
    const view = store.view(it.orgId);
    if (view === undefined || !view.serves(it.version)) return { retry: true };
    const snap = view.snapshot;
    if (it.kind === 'eval') return evaluateOne(snap, it, nowMs);
    if (it.kind === 'bulk') return evaluateBulk(snap, it, nowMs);
    return executeGraphQL(snap, it, nowMs).catch(internal);
  } catch (err) {
    return internal(err);
  }
}

export default async function evaluateBatch(task: EvalTask): Promise<unknown> {
  const lines = decodeLines(task.items);
  const out: string[] = new Array(lines.length);
  for (let i = 0; i < lines.length; i++) {
    const a = answer(lines[i], task.nowMs);
    out[i] = encodeOutcome(a instanceof Promise ? await a : a);
  }
  // The batch's insights counts travel with its answers (one more line): none is left behind in a
  // worker that is stopped or replaced (docs/insights.md).
  const insights = evalCounts.insights;
  if (insights !== null && insights.pending) out.push(INSIGHTS_LINE + JSON.stringify(insights.drain([], Math.floor(Date.now() / 1000))));
  // So do its sampled contexts (VEXIL_CONTEXT_SAMPLE; at most N per flag and stage the batch evaluated):
  // a worker has no timer of its own to send them later.
  const samples = evalCounts.samples;
  if (samples !== null && samples.pending) out.push(SAMPLES_LINE + JSON.stringify(samples.drain()));
  return move(encodeLines(out));
}
