/**
 * A front thread (CONTRACT 20, docs/threads.md): one more uWebSockets.js app on the node's port,
 * which parses, admits and answers like the main thread's. It runs the evaluation routes itself
 * for the keys it holds, reading the node's one copy of the flag data in shared memory
 * (snapshots/shared-store.ts) and the node's shared token buckets; everything else it relays to
 * the main thread (http/threads/relay.ts). Its mailbox: http/threads/mailbox.ts.
 */
import { parentPort, receiveMessageOnPort, workerData, type MessagePort } from 'node:worker_threads';
import { KeyMirror, NOT_HELD } from '../src/auth/key-mirror.js';
import { evaluationRoutes } from '../src/features/evaluation/routes.js';
import { ExchangeContext } from '../src/http/exchange.js';
import type { FromThread, ThreadData, ToThread } from '../src/http/threads/mailbox.js';
import { RelayClient } from '../src/http/threads/relay.js';
import { threadRoutes } from '../src/http/threads/thread-routes.js';
import { createUwsFront } from '../src/http/uws-front.js';
import { loadNativeUws, UWS_CANDIDATES } from '../src/http/uws.js';
import { OFREP_PREFIX, ofrepError, ofrepSingleRoute } from '../src/ofrep/routes.js';
import { EvalCounts } from '../src/ops/eval-counts.js';
import { insightsPostMs } from '../src/insights/counter.js';
import { RouteStatsTable } from '../src/ops/route-stats.js';
import { SharedRateLimiter } from '../src/ratelimit/shared-limiter.js';
import type { FrontRuntime } from '../src/runtime.js';
import type { OrgSnapshot } from '../src/engine/index.js';
import { SharedStoreReader } from '../src/snapshots/shared-store.js';
import { createLogger } from '../src/util/log.js';

const data = workerData as ThreadData;
const { config } = data;
const port = parentPort as MessagePort;
const post = (msg: FromThread): void => port.postMessage(msg);
const log = createLogger(config.logLevel, { thread: data.index });

const store = new SharedStoreReader(config.workerFlagCache);
const relay = new RelayClient(post, (hash, key, untilMs) => keys.learn(hash, key, untilMs));
const keys = new KeyMirror(new Int32Array(data.keyEpoch), drain, config.keyCacheTtlMs);
const requests = new RouteStatsTable();
const evalCounts = new EvalCounts(data.evalCounts, config.insights, config.contextSample);

function receive(msg: ToThread): void {
  if (relay.receive(msg)) return;
  switch (msg.t) {
    case 'store':
      store.receive(msg.msg);
      return;
    case 'keys':
      if ('keyId' in msg) keys.forgetKey(msg.keyId);
      else if ('orgId' in msg) keys.forgetOrg(msg.orgId);
      else keys.clear();
      return;
    case 'stats':
      post({ t: 'stats', id: msg.id, routes: requests.snapshot() });
      return;
    case 'drain':
      void shutdown(msg.graceMs);
      return;
  }
}

/** Everything the main thread has posted so far, handled now (a revocation must not wait for the event loop). */
function drain(): void {
  for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) receive(m.message as ToThread);
}

/** What the main thread alone decides (the failed-authentication budget) is relayed to it. */
const mainThreadOnly = new Proxy(
  {},
  {
    get: () => () => {
      throw NOT_HELD;
    },
  },
);

// What the evaluation routes read here (auth/authenticate.ts, evaluation/evaluate.ts): the keys this
// thread holds, the shared flag data, the node's token buckets; no pool (every front thread evaluates on
// its own core), no bus, no database.
const rt = {
  config,
  log,
  pool: null,
  evalCounts,
  now: Date.now,
  keys,
  authFailures: mainThreadOnly,
  limiter: SharedRateLimiter.attach(data.limits),
  snapshots: {
    peek: (orgId: string): OrgSnapshot | undefined => store.view(orgId)?.snapshot,
    get(orgId: string): OrgSnapshot {
      const view = store.view(orgId);
      if (view === undefined) throw NOT_HELD;
      return view.snapshot;
    },
  },
} as unknown as FrontRuntime;

const exchanges = new ExchangeContext(log, requests, config.maxAnswerBytes);
const routes = threadRoutes(data.routes, {
  local: [...evaluationRoutes(rt), ofrepSingleRoute(rt)],
  relay,
  corsOrigins: config.corsOrigins ?? [],
  errorShapes: [{ prefix: OFREP_PREFIX, onError: ofrepError }],
});
const uws = loadNativeUws(UWS_CANDIDATES);
if (!uws.ok) throw new Error(`Front thread ${data.index}: uWebSockets.js does not load here: ${uws.reasons.join('; ')}`);
const front = createUwsFront(uws.module, { kind: 'uws', package: uws.name, version: uws.version, fallbackReason: null }, exchanges, routes, config.clientTimeouts);

port.on('message', (msg: ToThread) => receive(msg));

// This thread's evaluation counts per flag go to the main thread every `insightsPostMs`, and at
// the end (docs/insights.md), with its sampled contexts (VEXIL_CONTEXT_SAMPLE, samples/sampler.ts).
function postInsights(): void {
  const insights = evalCounts.insights;
  const samples = evalCounts.samples;
  const rows = insights !== null && insights.pending ? insights.drain([], Math.floor(Date.now() / 1000)) : [];
  if (samples !== null && samples.pending) post({ t: 'insights', rows, samples: samples.drain() });
  else if (rows.length > 0) post({ t: 'insights', rows });
}
const insightsTimer = setInterval(postInsights, insightsPostMs(config.insightsFlushMs));
insightsTimer.unref();

async function shutdown(graceMs: number): Promise<void> {
  exchanges.draining = true;
  front.stopAccepting();
  exchanges.endStreams();
  await exchanges.idle(graceMs);
  // Answers written with `Connection: close` are still leaving their sockets (node.ts LINGER_MS).
  await new Promise((r) => setTimeout(r, 250));
  // Closing every socket ends the app's hold on the event loop; the thread then ends by itself
  // (uWebSockets.js must not be torn down with sockets open: uWebSockets.js#324).
  front.closeConnections();
  clearInterval(insightsTimer);
  postInsights();
  port.close();
}

if (data.port === null) post({ t: 'ready', descriptor: front.acceptor?.descriptor() });
else {
  await front.listen(data.host, data.port);
  post({ t: 'ready' });
}
