/**
 * Per-key rate limits (docs/api.md, "Order of checks"): every Management Key has an evaluation
 * bucket and a management bucket of VEXIL_RATE_LIMIT_* tokens per second, burst one second's
 * worth. An empty bucket is 429 RATE_LIMITED with Retry-After. The limit comes after 401 and 402
 * and before 403.
 *
 * The nodes here run at 5 requests per second per bucket: a burst of 5, then one token every
 * 200 ms. Bursts are sent back to back on loopback, far inside 200 ms.
 */
import t, { type Test } from 'tap';
import {
  createFlag,
  evaluate,
  expectProblem,
  operatorRequest,
  OPERATOR_TOKEN,
  randomKey,
  startTestNode,
  upsertConfig,
  type Res,
  type TestNode,
} from '../../helpers/node.js';

// Several real nodes per file (PGlite start-up is seconds each): more than tap's default 120 s on a busy machine.
t.setTimeout(300_000);

const RATE = 5;
const env = { VEXIL_OPERATOR_TOKEN: OPERATOR_TOKEN, VEXIL_RATE_LIMIT_EVAL: String(RATE), VEXIL_RATE_LIMIT_MGMT: String(RATE) };
const ev = { userId: 'u1', stage: 'production' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Setup calls share the admin's management bucket: wait out 429s (honouring Retry-After). */
async function paced(call: () => Promise<Res>): Promise<Res> {
  for (;;) {
    const r = await call();
    if (r.status !== 429) return r;
    await sleep(Number(r.headers.get('retry-after') ?? '1') * 1000);
  }
}

async function setup(n: TestNode) {
  if ((await paced(() => createFlag(n, 'f'))).status !== 201) throw new Error('flag');
  if ((await paced(() => upsertConfig(n, 'f', { defaultVariantKey: 'on' }))).status !== 200) throw new Error('config');
}

async function newKey(n: TestNode, body: Record<string, unknown>): Promise<{ id: string; key: string }> {
  const r = await paced(() => n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'k', ...body } }));
  if (r.status !== 201) throw new Error(`key: ${r.status} ${r.text}`);
  return r.body;
}

/** Waits until every bucket is full again (burst = one second's worth). */
const refill = () => sleep(1100);

function expectLimited(t: Test, r: Res, what: string) {
  expectProblem(t, r, 429, 'RATE_LIMITED', what);
  const retry = r.headers.get('retry-after');
  t.match(retry, /^[1-9]\d*$/, `${what}: Retry-After is a positive whole number of seconds`);
  // At 5 per second the next token is at most 200 ms away: Retry-After rounds up to 1 s.
  t.equal(retry, '1', `${what}: Retry-After is 1 s at ${RATE}/s`);
}

/**
 * Follows one bucket from a moment it is known to be full, so that assertions stay exact on a
 * slow or loaded machine: a call must be refused only when the calls that passed since `begin`
 * already used the burst plus everything that can have refilled until the answer came back
 * (RATE per second). When a stall let a token refill, the call is reported, not failed.
 */
class Meter {
  private start = 0;
  private passed = 0;
  constructor(private readonly t: Test) {}

  /** The bucket is full now (fresh key, or after `refill()`). */
  begin(): this {
    this.start = performance.now();
    this.passed = 0;
    return this;
  }

  private allowance(): number {
    return RATE + Math.floor((RATE * (performance.now() - this.start)) / 1000);
  }

  /** One call that must pass because the burst is not used up yet. */
  async pass(call: () => Promise<Res>, status: number, what: string): Promise<Res> {
    const r = await call();
    this.t.equal(r.status, status, what);
    if (r.status !== 429) this.passed++;
    return r;
  }

  /** The first RATE calls pass with `status` (the burst), then calls go on until the first 429. */
  async exhaust(call: () => Promise<Res>, status: number, what: string): Promise<Res[]> {
    const out: Res[] = [];
    for (let i = 0; i < RATE; i++) out.push(await this.pass(call, status, `${what}: call ${i + 1} of the burst`));
    for (let i = 0; i < 40; i++) {
      const r = await call();
      const allowance = this.allowance();
      if (r.status === 429) {
        expectLimited(this.t, r, `${what}: first refusal`);
        this.t.ok(this.passed <= allowance, `${what}: no more than the burst plus the refill passed (${this.passed} <= ${allowance})`);
        return out;
      }
      this.t.equal(r.status, status, `${what}: status while refilling`);
      this.passed++;
      out.push(r);
    }
    this.t.fail(`${what}: never limited after ${this.passed} calls`);
    return out;
  }

  /**
   * A call made after the bucket is used up: 429 unless enough time passed for a token to
   * refill. Returns true when the call was refused.
   */
  async limited(call: () => Promise<Res>, what: string): Promise<boolean> {
    const r = await call();
    if (r.status === 429) {
      expectLimited(this.t, r, what);
      return true;
    }
    this.passed++;
    if (this.passed > this.allowance()) {
      expectLimited(this.t, r, what); // fails: the bucket cannot have refilled
    } else {
      this.t.comment(`${what}: a slow stretch let a token refill (${r.status}); not counted`);
    }
    return false;
  }
}

/** Sends `count` calls back to back. */
async function repeat(count: number, call: () => Promise<Res>): Promise<Res[]> {
  const out: Res[] = [];
  for (let i = 0; i < count; i++) out.push(await call());
  return out;
}

t.test('evaluation: a burst of the rate, then 429 with Retry-After; honouring it succeeds', async (t) => {
  const n = await startTestNode(t, { env });
  await setup(n);
  const { key } = await newKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  const m = new Meter(t).begin();
  await m.exhaust(() => evaluate(n, key, 'f', ev), 200, 'evaluation');
  await m.limited(() => evaluate(n, key, 'f', ev), 'evaluation right after the refusal');
  await sleep(1000); // Retry-After (asserted to be 1 s)
  const after = await evaluate(n, key, 'f', ev);
  t.equal(after.status, 200, 'after Retry-After seconds the key evaluates again');
  t.equal(after.body.key, 'on');
});

t.test('management: a burst of the rate, then 429; refused writes change nothing', async (t) => {
  const n = await startTestNode(t, { env });
  await setup(n);
  const { key } = await newKey(n, { permissions: ['CanWrite'], application: 'default' });
  const before = (await paced(() => n.req('GET', '/api/flags/f', { key: n.adminKey }))).body;
  const writes: [string, () => Promise<Res>][] = [
    ['create flag', () => createFlag(n, 'new-flag', {}, key)],
    ['upsert config', () => upsertConfig(n, 'f', { defaultVariantKey: 'off' }, key)],
    ['update flag', () => n.req('PUT', '/api/flags/f', { key, body: { isArchived: true } })],
    ['delete flag', () => n.req('DELETE', '/api/flags/f', { key })],
  ];
  let refused = 0;
  for (const [what, write] of writes) {
    await refill();
    const m = new Meter(t).begin();
    await m.exhaust(() => n.req('GET', '/api/flags', { key }), 200, `reads before ${what}`);
    if (await m.limited(write, what)) refused++;
    else break; // a slow stretch let the write through: the read-back below would not hold
  }
  if (refused === writes.length) {
    await refill();
    t.same((await n.req('GET', '/api/flags/f', { key })).body, before, 'flag and config unchanged');
    t.equal((await n.req('GET', '/api/flags/new-flag', { key })).status, 404, 'no flag created');
  }
});

t.test("key management endpoints are limited on the admin key's management bucket", async (t) => {
  const n = await startTestNode(t, { env });
  const victim = await newKey(n, { permissions: ['CanRead'] });
  const calls: [string, () => Promise<Res>][] = [
    ['create key', () => n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'x', permissions: ['CanRead'] } })],
    ['rotate key', () => n.req('POST', `/api/keys/${victim.id}/rotate`, { key: n.adminKey })],
    ['disable key', () => n.req('POST', `/api/keys/${victim.id}/disable`, { key: n.adminKey })],
    ['delete key', () => n.req('DELETE', `/api/keys/${victim.id}`, { key: n.adminKey })],
  ];
  let refused = 0;
  for (const [what, call] of calls) {
    await refill();
    const m = new Meter(t).begin();
    await m.exhaust(() => n.req('GET', '/api/keys', { key: n.adminKey }), 200, `key list before ${what}`);
    if (await m.limited(call, what)) refused++;
    else break;
  }
  if (refused === calls.length) {
    await refill();
    const keys = await n.req('GET', '/api/keys', { key: n.adminKey });
    t.equal(keys.body.length, 2, 'no key created or deleted');
    t.equal((await n.req('GET', '/api/flags', { key: victim.key })).status, 200, 'the victim key was neither rotated nor disabled');
  }
});

t.test('the evaluation bucket and the management bucket are separate', async (t) => {
  const n = await startTestNode(t, { env });
  await setup(n);
  const { key } = await newKey(n, { permissions: ['CanEvaluate', 'CanRead'], application: 'default' });
  await refill();
  const evals = new Meter(t).begin();
  const reads = new Meter(t).begin();
  await evals.exhaust(() => evaluate(n, key, 'f', ev), 200, 'evaluations');
  await reads.exhaust(() => n.req('GET', '/api/flags', { key }), 200, 'then management calls still have their full burst');
  await evals.limited(() => evaluate(n, key, 'f', ev), 'evaluation bucket still empty');

  await refill();
  const reads2 = new Meter(t).begin();
  const evals2 = new Meter(t).begin();
  await reads2.exhaust(() => n.req('GET', '/api/flags', { key }), 200, 'management calls first');
  await evals2.exhaust(() => evaluate(n, key, 'f', ev), 200, 'then evaluations still have their full burst');
});

t.test("buckets are per key: one key's exhaustion does not affect another key", async (t) => {
  const n = await startTestNode(t, { env });
  await setup(n);
  const a = await newKey(n, { permissions: ['CanEvaluate', 'CanRead'], application: 'default' });
  const b = await newKey(n, { permissions: ['CanEvaluate', 'CanRead'], application: 'default' });
  await refill();
  const aEval = new Meter(t).begin();
  const aMgmt = new Meter(t).begin();
  const bEval = new Meter(t).begin();
  const bMgmt = new Meter(t).begin();
  await aEval.exhaust(() => evaluate(n, a.key, 'f', ev), 200, 'key A evaluations');
  await aMgmt.exhaust(() => n.req('GET', '/api/flags', { key: a.key }), 200, 'key A management calls');
  await bEval.exhaust(() => evaluate(n, b.key, 'f', ev), 200, 'key B evaluates its full burst');
  await bMgmt.exhaust(() => n.req('GET', '/api/flags', { key: b.key }), 200, 'key B reads its full burst');
  t.equal((await n.req('GET', '/api/keys', { key: n.adminKey })).status, 200, 'the admin key is not limited by them');
  // A rotation keeps the key's identity, hence its buckets: a new value is no way around the limit.
  const rotated = await n.req('POST', `/api/keys/${b.id}/rotate`, { key: n.adminKey });
  t.equal(rotated.status, 200);
  await bEval.limited(() => evaluate(n, rotated.body.key, 'f', ev), 'key B after rotation');
});

t.test('order: 401 and 402 come before 429, and 429 before 403', async (t) => {
  const n = await startTestNode(t, { env });
  await setup(n);
  // 429 before 403: an evaluation-only key keeps calling a management endpoint it may not use.
  const evalOnly = await newKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  const m1 = new Meter(t).begin();
  const denied = await m1.exhaust(() => n.req('GET', '/api/flags', { key: evalOnly.key }), 403, 'evaluation key listing flags');
  for (const r of denied) expectProblem(t, r, 403, 'FORBIDDEN', 'within the burst');
  await m1.limited(() => createFlag(n, 'x', {}, evalOnly.key), 'exhausted bucket + missing permission (write)');
  // Same for the evaluation bucket: a read-only key evaluating.
  const readOnly = await newKey(n, { permissions: ['CanRead'] });
  const m2 = new Meter(t).begin();
  for (const r of await m2.exhaust(() => evaluate(n, readOnly.key, 'f', ev), 403, 'read key evaluating')) {
    expectProblem(t, r, 403, 'FORBIDDEN', 'evaluate without permission');
  }

  // 401 before 429: unknown and malformed keys are refused as such however often they come.
  const unknown = randomKey();
  for (const r of await repeat(3 * RATE, () => evaluate(n, unknown, 'f', ev))) expectProblem(t, r, 401, 'UNAUTHENTICATED', 'unknown key, never 429');
  for (const r of await repeat(2 * RATE, () => n.req('GET', '/api/flags', { key: unknown.toUpperCase() }))) expectProblem(t, r, 401, 'UNAUTHENTICATED', 'malformed key, never 429');
  // A disabled key whose bucket is empty is 401.
  const doomed = await newKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  await new Meter(t).begin().exhaust(() => evaluate(n, doomed.key, 'f', ev), 200, 'doomed key');
  t.equal((await paced(() => n.req('POST', `/api/keys/${doomed.id}/disable`, { key: n.adminKey }))).status, 200);
  expectProblem(t, await evaluate(n, doomed.key, 'f', ev), 401, 'UNAUTHENTICATED', 'disabled + exhausted');

  // 402 before 429: an exhausted key of an organization whose subscription ends.
  const r = await operatorRequest(n, 'POST', '/organizations', { name: 'acme', environments: ['production'], applications: ['default'] });
  t.equal(r.status, 201);
  const acme: TestNode = { ...n, adminKey: r.body.adminKey };
  await setup(acme);
  const acmeEval = await newKey(acme, { permissions: ['CanEvaluate'], application: 'default' });
  await refill();
  await new Meter(t).begin().exhaust(() => evaluate(acme, acmeEval.key, 'f', ev), 200, 'acme evaluation key');
  await new Meter(t).begin().exhaust(() => acme.req('GET', '/api/keys', { key: acme.adminKey }), 200, 'acme admin key');
  t.equal((await operatorRequest(n, 'PATCH', '/organizations/acme', { subscriptionActive: false })).status, 200);
  expectProblem(t, await evaluate(acme, acmeEval.key, 'f', ev), 402, 'PAYMENT_REQUIRED', 'inactive + exhausted evaluation');
  expectProblem(t, await acme.req('GET', '/api/keys', { key: acme.adminKey }), 402, 'PAYMENT_REQUIRED', 'inactive + exhausted management');
  // The operator API is not a Management Key call and has no per-key bucket.
  for (const on of [true, false, true, false, true, false, true]) {
    t.equal((await operatorRequest(n, 'PATCH', '/organizations/acme', { subscriptionActive: on })).status, 200, 'operator call never 429');
  }
});

t.test('requests refused before the limiter (401, 402) take no token', async (t) => {
  const n = await startTestNode(t, { env });
  await setup(n);
  const r = await operatorRequest(n, 'POST', '/organizations', { name: 'acme', environments: ['production'], applications: ['default'] });
  const acme: TestNode = { ...n, adminKey: r.body.adminKey };
  await setup(acme);
  const k = await newKey(acme, { permissions: ['CanEvaluate'], application: 'default' });
  t.equal((await operatorRequest(n, 'PATCH', '/organizations/acme', { subscriptionActive: false })).status, 200);
  await refill();
  for (const res of await repeat(3 * RATE, () => evaluate(acme, k.key, 'f', ev))) expectProblem(t, res, 402, 'PAYMENT_REQUIRED', 'inactive');
  t.equal((await operatorRequest(n, 'PATCH', '/organizations/acme', { subscriptionActive: true })).status, 200);
  const after = await repeat(RATE, () => evaluate(acme, k.key, 'f', ev));
  t.same(after.map((x) => x.status), Array(RATE).fill(200), 'the full burst is still there after the 402s');
});
