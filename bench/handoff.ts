/**
 * Micro-bench of the pool's hand-off cost on the front thread (no HTTP, no worker), per item, for
 * a batch of 64 REST evaluations and for one 100-alias GraphQL document:
 *
 * - `clone`: the earlier hand-off (docs/benchmarks.md, "The worker pool"): the items as an object
 *   graph through the structured-clone serializer (v8.serialize, which postMessage uses) and the
 *   answers back (v8.deserialize of the worker's object graph).
 * - `lines`: what it does now (src/evaluation/pool/protocol.ts): each item JSON-encoded once, the batch one
 *   UTF-8 buffer (transferred, not copied); the answers one buffer decoded and split.
 *
 * Both sides of each method are measured on this thread (the worker's half of each round trip is
 * timed too, and reported separately). CPU time from process.cpuUsage.
 *
 *   npm run build && node dist/bench/handoff.js [--rounds 20000]
 */
import { deserialize, serialize } from 'node:v8';
import {
  decodeItem,
  decodeLines,
  decodeOutcome,
  encodeItem,
  encodeLines,
  encodeOutcome,
  type EvalOutcome,
  type PoolItem,
} from '../src/evaluation/pool/protocol.js';
import { numberArg } from './argv.js';

const rounds = numberArg('rounds', 20_000);

const principal = { keyId: 'k1', keyName: 'bench', orgId: 'o1', permissions: new Set(['CanEvaluate'] as const), application: 'default', environment: null };
const rest: PoolItem[] = Array.from({ length: 64 }, (_, i) => ({
  kind: 'eval', orgId: '5b2a2c8e-1111-4c1e-9d1e-2f8f7c3c0a01', version: 42, flag: `bench-flag-${i % 10}`,
  userId: `user-${i}`, stage: 'production', clientId: null, context: { country: 'NL', plan: 'pro' },
}));
// The worker encodes the engine's results, `index` included (encodeOutcome leaves it out of the wire).
const restOut: EvalOutcome[] = rest.map(() => ({ key: 'on', variant: true, reason: { code: 'rule_matched', message: 'Matched rule nl at priority 1', ruleId: 'nl' }, index: 0 }));
const query = `{ ${Array.from({ length: 100 }, (_, i) => `e${i}: evaluate(key: "bench-flag-${i}", userId: "u0", stage: "production", context: {country: "NL"}) { key variant }`).join(' ')} }`;
const gql: PoolItem[] = [{ kind: 'graphql', orgId: 'o1', version: 42, principal, query, operationName: null, variables: null }];
const gqlOut: EvalOutcome[] = [{ graphql: JSON.stringify({ data: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`e${i}`, { key: 'on', variant: true }])) }) }];

type Side = { front: number; worker: number };

function cpuUs(fn: () => void): number {
  const c0 = process.cpuUsage();
  fn();
  const c = process.cpuUsage(c0);
  return c.user + c.system;
}

function clone(items: PoolItem[], outs: EvalOutcome[]): Side {
  let wire: Buffer = Buffer.alloc(0);
  let back: Buffer = Buffer.alloc(0);
  const front1 = () => { wire = serialize({ nowMs: 1, items }); };
  const worker = () => { deserialize(wire); back = serialize(outs); };
  const front2 = () => { deserialize(back); };
  return { front: cpuUs(() => { for (let r = 0; r < rounds; r++) { front1(); } }) + cpuUs(() => { worker(); for (let r = 0; r < rounds; r++) front2(); }), worker: cpuUs(() => { for (let r = 0; r < rounds; r++) worker(); }) };
}

function lines(items: PoolItem[], outs: EvalOutcome[]): Side {
  let wire: Uint8Array = new Uint8Array();
  let back: Uint8Array = new Uint8Array();
  const front1 = () => { wire = encodeLines(items.map(encodeItem)); };
  const worker = () => { decodeLines(wire).map(decodeItem); back = encodeLines(outs.map(encodeOutcome)); };
  const front2 = () => { decodeLines(back).map(decodeOutcome); };
  return { front: cpuUs(() => { for (let r = 0; r < rounds; r++) { front1(); } }) + cpuUs(() => { worker(); for (let r = 0; r < rounds; r++) front2(); }), worker: cpuUs(() => { for (let r = 0; r < rounds; r++) worker(); }) };
}

const perItem = (us: number, n: number) => (us / rounds / n).toFixed(2);
for (const [name, items, outs, evals] of [['rest x64', rest, restOut, 64], ['graphql 100-alias', gql, gqlOut, 100]] as const) {
  clone(items as PoolItem[], outs as EvalOutcome[]); // warm-up
  lines(items as PoolItem[], outs as EvalOutcome[]);
  const c = clone(items as PoolItem[], outs as EvalOutcome[]);
  const l = lines(items as PoolItem[], outs as EvalOutcome[]);
  console.log(`${name}: µs per evaluation, front thread: clone ${perItem(c.front, evals)} → lines ${perItem(l.front, evals)}; worker: clone ${perItem(c.worker, evals)} → lines ${perItem(l.worker, evals)}`);
}
