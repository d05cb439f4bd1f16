/**
 * CPU cost of the JavaScript steps of one REST evaluation that can be run alone (issue 28,
 * docs/benchmarks.md "REST against the bare endpoint"), measured as process CPU time over many
 * iterations, so a busy machine slows it down without changing its figures much (unlike req/s).
 * The steps use the bench's own request (scenarios.ts EVAL_BODY, a 64-hex key).
 *
 *   node dist/bench/rest-steps.js [--iterations 1000000]
 *
 * What it cannot run alone (uWS's native parsing and writing, the rule engine on a snapshot, the
 * exchange around them) is in the CPU profile of the service under load (cpu-profile-summary.ts).
 */
import { randomBytes } from 'node:crypto';
import { isUtf8 } from 'node:buffer';
import { hashKey, KeyHashMemo } from '../src/auth/key-material.js';
import { KEY_RE } from '../src/domain/input-formats.js';
import { parseEvaluationBody } from '../src/domain/validation/evaluation.js';
import { JsonDepthScanner } from '../src/domain/validation/json-depth.js';
import { EVAL_BODY } from './scenarios.js';

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const N = Number(arg('--iterations') ?? 1_000_000);

/** CPU µs per call of `fn` (median of 5 rounds of N). Each call gets a fresh copy of its input, as a request does. */
function cost(fn: (i: number) => unknown): number {
  const rounds: number[] = [];
  let sink = 0;
  for (let r = 0; r < 5; r++) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < N; i++) if (fn(i) !== undefined) sink++;
    const c = process.cpuUsage(c0);
    rounds.push((c.user + c.system) / N);
  }
  if (sink < 0) console.log(sink);
  return rounds.sort((a, b) => a - b)[2];
}

const key = randomBytes(32).toString('hex');
// A header value is a new flat string per request, its hash not computed yet: make one per call
// (what that costs is measured alone and subtracted).
const keyBytes = Buffer.from(key, 'latin1');
const fresh = (_s: string, _i: number): string => keyBytes.toString('latin1');
const body = Buffer.from(EVAL_BODY);
const memo = new KeyHashMemo();
memo.remember(key, hashKey(key));
const parsed = JSON.parse(EVAL_BODY) as unknown;
const reply = { variant: true, key: 'on' };

const base = cost((i) => fresh(key, i));
const steps: [string, number][] = [
  ['key format check (KEY_RE)', cost((i) => KEY_RE.test(fresh(key, i))) - base],
  ['key hash: SHA-256 hex (hashKey, one-shot crypto.hash)', cost((i) => hashKey(fresh(key, i))) - base],
  ['key hash from the memo (KeyHashMemo.get of a fresh string)', cost((i) => memo.get(fresh(key, i))) - base],
  ['body copy (Buffer.copyBytesFrom)', cost(() => Buffer.copyBytesFrom(body))],
  ['body depth scan (JsonDepthScanner)', cost(() => new JsonDepthScanner(33).feed(body))],
  ['body UTF-8 check (isUtf8)', cost(() => isUtf8(body))],
  ['body decode + JSON.parse', cost(() => JSON.parse(body.toString('utf8')))],
  ['validation (parseEvaluationBody)', cost(() => parseEvaluationBody(parsed))],
  ['answer serialisation (JSON.stringify)', cost(() => JSON.stringify(reply))],
];
console.log(`| step | CPU µs per request |\n|---|---:|`);
for (const [name, us] of steps) console.log(`| ${name} | ${us.toFixed(3)} |`);
