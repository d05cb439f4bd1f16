/**
 * Evaluation worker (Piscina). Holds a replica of every organization's snapshot, kept current by
 * the front thread's BroadcastChannel, and runs batches of work against it: single evaluations
 * with the pure engine, and evaluation-only GraphQL documents with graphql-jit (compiled once per
 * worker and document, like on the front thread).
 */
import { BroadcastChannel, workerData } from 'node:worker_threads';
import { buildSnapshot, compileFlag, evaluateFlag, type OrgSnapshot } from '../src/evaluation/index.js';
import type { EvalItem, EvalOutcome, EvalTask, GraphQLItem, SnapshotMessage, WorkerData } from '../src/pool/protocol.js';
import { GraphQLExecutor } from '../src/graphql/execute.js';
import type { GraphQLContext } from '../src/graphql/resolvers.js';
import type { Runtime } from '../src/runtime.js';
import { createLogger } from '../src/util/log.js';

const STALE_WAIT_MS = 2000;

const snapshots = new Map<string, OrgSnapshot>();
const waiters = new Map<string, { version: number; resolve: () => void }[]>();
const config = workerData as WorkerData;
const channel = new BroadcastChannel(config.channel);
const graphql = new GraphQLExecutor(createLogger('warn', { thread: 'evaluation-worker' }), {
  maxDepth: config.graphqlMaxDepth,
  maxEvaluations: config.graphqlMaxEvaluations,
});
channel.unref();

function apply(msg: SnapshotMessage): void {
  switch (msg.type) {
    case 'full': {
      const cur = snapshots.get(msg.org.id);
      if (cur !== undefined && cur.org.version > msg.org.version) return;
      snapshots.set(msg.org.id, buildSnapshot(msg.org, msg.flags.map((f) => f.flag), new Map(msg.flags.map((f) => [f.flag.name, f.configs]))));
      break;
    }
    case 'flag': {
      const cur = snapshots.get(msg.org.id);
      if (cur === undefined || cur.org.version >= msg.org.version) return;
      if (msg.data === null) cur.flags.delete(msg.name);
      else cur.flags.set(msg.name, compileFlag(msg.data.flag, msg.data.configs));
      cur.org = msg.org;
      break;
    }
    case 'settings': {
      const cur = snapshots.get(msg.org.id);
      if (cur === undefined || cur.org.version >= msg.org.version) return;
      cur.org = msg.org;
      break;
    }
    case 'drop':
      snapshots.delete(msg.orgId);
      return;
    default:
      return;
  }
  const orgId = msg.org.id;
  const list = waiters.get(orgId);
  if (list === undefined) return;
  const version = snapshots.get(orgId)?.org.version ?? 0;
  const still = list.filter((w) => (w.version <= version ? (w.resolve(), false) : true));
  if (still.length === 0) waiters.delete(orgId);
  else waiters.set(orgId, still);
}

channel.onmessage = (ev: unknown) => apply((ev as { data: SnapshotMessage }).data);
channel.postMessage({ type: 'hello' } satisfies SnapshotMessage);

function waitFor(orgId: string, version: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), STALE_WAIT_MS);
    let list = waiters.get(orgId);
    if (list === undefined) waiters.set(orgId, (list = []));
    list.push({ version, resolve: () => (clearTimeout(timer), resolve(true)) });
  });
}

function evaluateOne(snap: OrgSnapshot, it: EvalItem, nowMs: number): EvalOutcome {
  const flag = snap.flags.get(it.flag);
  if (flag === undefined) return { error: 'NOT_FOUND', message: `Flag '${it.flag}' not found` };
  return evaluateFlag(snap, flag, { userId: it.userId, stage: it.stage, clientId: it.clientId, context: it.context }, nowMs);
}

async function executeGraphQL(snap: OrgSnapshot, it: GraphQLItem, nowMs: number): Promise<EvalOutcome> {
  const p = graphql.prepare(it.query, it.operationName);
  if (!p.ok) return { graphql: JSON.stringify({ errors: p.errors }) };
  // What the `evaluate` resolver reads of the runtime: the replica and the request's clock.
  const rt = { snapshots: { peek: (orgId: string) => snapshots.get(orgId) }, now: () => nowMs } as unknown as Runtime;
  const ctx: GraphQLContext = { rt, auth: { principal: it.principal, snapshot: snap }, deferredAny: p.deferredAny };
  return { graphql: await graphql.run(p, ctx, it.variables) };
}

export default async function evaluateBatch(task: EvalTask): Promise<EvalOutcome[]> {
  const out: EvalOutcome[] = new Array(task.items.length);
  for (let i = 0; i < task.items.length; i++) {
    const it = task.items[i];
    let snap = snapshots.get(it.orgId);
    if (snap === undefined || snap.org.version < it.version) {
      if (!(await waitFor(it.orgId, it.version))) {
        out[i] = { error: 'STALE', message: 'Evaluation worker has not received the current snapshot' };
        continue;
      }
      snap = snapshots.get(it.orgId)!;
    }
    out[i] = it.kind === 'eval' ? evaluateOne(snap, it, task.nowMs) : await executeGraphQL(snap, it, task.nowMs);
  }
  return out;
}
