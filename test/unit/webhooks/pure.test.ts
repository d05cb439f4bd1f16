/**
 * The pure parts of webhooks (docs/webhooks.md): event patterns, the retry schedule over 3 days
 * with a faked clock, the retry decision, Retry-After, the signature header (checked with the
 * `standardwebhooks` reference package), secrets at rest, and the endpoint input checks.
 */
import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { matches, matchesAny, patternProblem } from '../../../src/features/webhooks/patterns.js';
import { backoffMs, decide, DEFAULT_RETRY, parseRetryAfter, type Decision } from '../../../src/features/webhooks/retry.js';
import { newSecret, webhookHeaders } from '../../../src/features/webhooks/signature.js';
import { openSecret, sealSecret } from '../../../src/features/webhooks/secrets.js';
import { parseDeliveriesQuery, parseEndpointInput } from '../../../src/features/webhooks/validation.js';
import { AUDIT_ACTIONS } from '../../../src/domain/types.js';
import { isVexilError } from '../../../src/domain/errors.js';
import { loadConfig } from '../../../src/config.js';

t.test('patterns: validated, and matched as audit actions', async (t) => {
  for (const p of ['*', 'flag.*', 'change.*', 'flag.create', 'org.policy', 'flag.stale', 'change.request.*']) t.equal(patternProblem(p), null, `${p} is a pattern`);
  for (const p of ['', 'flag*', '*.create', 'flag.*.x', 'Flag.create', 'flag.', '.flag', 'flag..x', '**', 'flag.cre*', ' flag', 'x'.repeat(101), 3, null]) {
    t.not(patternProblem(p), null, `${JSON.stringify(p)} is refused`);
  }
  t.ok(matches('*', 'flag.create'));
  t.ok(matches('*', 'webhook.test'));
  t.ok(matches('flag.*', 'flag.create'));
  t.notOk(matches('flag.*', 'flags.create'), 'a prefix ends at its dot');
  t.notOk(matches('flag.*', 'config.upsert'));
  t.ok(matches('change.*', 'change.apply'), 'actions other features add match generically');
  t.ok(matches('flag.create', 'flag.create'));
  t.notOk(matches('flag.create', 'flag.created'));
  t.ok(matchesAny(['key.*', 'segment.create'], 'segment.create'));
  t.notOk(matchesAny(['key.*'], 'segment.create'));
  // Every audit action is matched by `*` and by its own prefix.
  for (const a of AUDIT_ACTIONS) t.ok(matches(`${a.split('.')[0]}.*`, a) && matches(a, a), a);
});

t.test('backoff: the first retry within about 2 s, doubling to at most 1 hour, jittered', async (t) => {
  t.equal(backoffMs(1, DEFAULT_RETRY, 0), 1000);
  t.equal(backoffMs(1, DEFAULT_RETRY, 0.999999), 2000);
  t.equal(backoffMs(2, DEFAULT_RETRY, 0.999999), 4000);
  t.equal(backoffMs(5, DEFAULT_RETRY, 0.999999), 32_000);
  t.equal(backoffMs(12, DEFAULT_RETRY, 1), 3_600_000, 'capped at an hour');
  t.equal(backoffMs(500, DEFAULT_RETRY, 1), 3_600_000, 'no overflow');
  t.equal(backoffMs(500, DEFAULT_RETRY, 0), 1_800_000, 'jitter keeps at least half the gap');
  for (let a = 1; a < 80; a++) {
    const lo = backoffMs(a, DEFAULT_RETRY, 0);
    const hi = backoffMs(a, DEFAULT_RETRY, 0.999999);
    t.ok(lo >= 1 && hi <= 3_600_000 && lo <= hi, `attempt ${a}: ${lo}..${hi}`);
  }
});

t.test('the 3-day schedule, on a faked clock: retried for at least 3 days, never a gap over an hour, then given up', async (t) => {
  for (const random of [0, 0.5, 0.999999]) {
    const created = Date.parse('2030-01-01T00:00:00Z');
    let now = created;
    let attempt = 1;
    let last: Decision;
    const gaps: number[] = [];
    for (;;) {
      // Every attempt fails (the receiver is down): a network error.
      last = decide({ status: null, retryAfterMs: null }, attempt, created, now, DEFAULT_RETRY, random);
      if (last.kind !== 'retry') break;
      gaps.push(last.at - now);
      now = last.at;
      attempt++;
      if (attempt > 10_000) break;
    }
    t.equal(last.kind, 'give-up', `random ${random}: given up at last`);
    t.ok(now - created >= 3 * 86_400_000, `random ${random}: the last attempt ${((now - created) / 3_600_000).toFixed(1)} h after the message (>= 72 h)`);
    t.ok(now - created < 3 * 86_400_000 + 3_600_000, `random ${random}: and given up within the hour after`);
    t.ok(gaps[0] <= 2000, `first retry after ${gaps[0]} ms`);
    t.ok(Math.max(...gaps) <= 3_600_000, 'no gap over an hour');
    for (let i = 1; i < gaps.length; i++) if (gaps[i] < gaps[i - 1] && gaps[i - 1] < 3_600_000 * 0.5) t.fail('gaps grow until the cap');
    t.ok(attempt > 60 && attempt < 200, `random ${random}: ${attempt} attempts in all`);
  }
});

t.test('the decision: 2xx delivered, 410 disables, others retried, Retry-After honoured', async (t) => {
  const c = 0;
  for (const s of [200, 201, 202, 204, 299]) t.same(decide({ status: s, retryAfterMs: null }, 1, c, 10, DEFAULT_RETRY, 0.5), { kind: 'delivered' }, `${s}`);
  t.same(decide({ status: 410, retryAfterMs: null }, 1, c, 10, DEFAULT_RETRY, 0.5), { kind: 'disable' });
  t.same(decide({ status: 410, retryAfterMs: null }, 99, c, 4 * 86_400_000, DEFAULT_RETRY, 0.5), { kind: 'disable' }, '410 disables even past the period');
  for (const s of [null, 100, 301, 302, 307, 400, 404, 429, 500, 503]) {
    const d = decide({ status: s, retryAfterMs: null }, 1, c, 10, DEFAULT_RETRY, 0.5);
    t.equal(d.kind, 'retry', `${s} is retried`);
  }
  t.same(decide({ status: 503, retryAfterMs: 30_000 }, 1, c, 10, DEFAULT_RETRY, 0.5), { kind: 'retry', at: 30_010 }, 'Retry-After: 30 s');
  t.same(decide({ status: 429, retryAfterMs: 0 }, 1, c, 10, DEFAULT_RETRY, 0.5), { kind: 'retry', at: 10 }, 'Retry-After: 0');
  t.same(decide({ status: 429, retryAfterMs: 86_400_000 }, 1, c, 10, DEFAULT_RETRY, 0.5), { kind: 'retry', at: 10 + 3_600_000 }, 'a day is read as the longest gap');
  t.same(decide({ status: 500, retryAfterMs: null }, 70, c, 3 * 86_400_000, DEFAULT_RETRY, 0.5), { kind: 'give-up' });
});

t.test('Retry-After: seconds or an HTTP date', async (t) => {
  const now = Date.parse('2030-01-01T00:00:00Z');
  t.equal(parseRetryAfter('120', now), 120_000);
  t.equal(parseRetryAfter(' 0 ', now), 0);
  t.equal(parseRetryAfter('Tue, 01 Jan 2030 00:01:00 GMT', now), 60_000);
  t.equal(parseRetryAfter('Mon, 31 Dec 2029 00:00:00 GMT', now), 0, 'a past date: now');
  t.equal(parseRetryAfter(undefined, now), null);
  t.equal(parseRetryAfter('soon', now), null);
  t.equal(parseRetryAfter('-5', now), null);
  t.equal(parseRetryAfter('1.5', now), null);
});

t.test('signature header: verified by the standardwebhooks package, one signature per live secret', async (t) => {
  const a = newSecret();
  const b = newSecret();
  t.match(a, /^whsec_[A-Za-z0-9+/]{43}=$/);
  t.equal(Buffer.from(a.slice(6), 'base64').length, 32, '32 random bytes');
  t.not(a, b);
  const body = JSON.stringify({ type: 'flag.create', data: { x: 'é' } });
  const one = webhookHeaders([a], 'msg_1', Date.now(), body);
  t.same(new Webhook(a).verify(body, one), JSON.parse(body));
  t.throws(() => new Webhook(b).verify(body, one), 'another secret does not verify');
  t.throws(() => new Webhook(a).verify(body + ' ', one), 'another body does not verify');
  const two = webhookHeaders([b, a], 'msg_2', Date.now(), body);
  t.equal(two['webhook-signature'].split(' ').length, 2, 'two space-separated signatures during a rotation');
  t.ok(two['webhook-signature'].split(' ').every((s) => s.startsWith('v1,')));
  t.same(new Webhook(a).verify(body, two), JSON.parse(body), 'the old secret verifies');
  t.same(new Webhook(b).verify(body, two), JSON.parse(body), 'the new secret verifies');
  const old = webhookHeaders([a], 'msg_3', Date.now() - 10 * 60_000, body);
  t.throws(() => new Webhook(a).verify(body, old), 'a timestamp 10 minutes old is refused by receivers');
});

t.test('secrets at rest: encrypted under VEXIL_CLUSTER_SECRET, else stored as is', async (t) => {
  const s = newSecret();
  const cluster = 'c'.repeat(40);
  const sealed = sealSecret(s, cluster);
  t.notOk(sealed.includes(s.slice(6)), 'the sealed form does not contain the secret');
  t.match(sealed, /^v1:/);
  t.equal(openSecret(sealed, cluster), s);
  t.equal(openSecret(sealed, 'd'.repeat(40)), null, 'another cluster secret cannot read it');
  t.equal(openSecret(sealed, null), null);
  t.not(sealSecret(s, cluster), sealed, 'a fresh IV each time');
  t.equal(openSecret(sealSecret(s, null), null), s);
  t.equal(openSecret(sealSecret(s, null), cluster), s);
});

t.test('endpoint input and deliveries query', async (t) => {
  t.same(parseEndpointInput({ url: 'https://x.example/h', events: ['flag.*', 'flag.*'] }), { url: 'https://x.example/h', events: ['flag.*'], description: '', enabled: true });
  const bad: unknown[] = [
    {},
    { url: 'https://x.example' },
    { events: ['*'] },
    { url: 'https://x.example', events: [] },
    { url: 'https://x.example', events: ['flag*'] },
    { url: 'https://x.example', events: '*' },
    { url: 'https://x.example', events: ['*'], secret: 'whsec_x' },
    { url: 'https://x.example', events: ['*'], enabled: 'yes' },
    { url: 'https://x.example', events: ['*'], description: 'x'.repeat(501) },
    { url: 'https://x.example', events: Array.from({ length: 51 }, (_, i) => `a${i}.*`) },
  ];
  for (const b of bad) {
    try {
      parseEndpointInput(b);
      t.fail(`${JSON.stringify(b).slice(0, 80)} accepted`);
    } catch (e) {
      t.ok(isVexilError(e) && e.code === 'BAD_REQUEST', `${JSON.stringify(b).slice(0, 80)}: 400`);
    }
  }
  t.same(parseDeliveriesQuery({}), { limit: 100, after: null });
  t.same(parseDeliveriesQuery({ limit: '5', after: '12' }), { limit: 5, after: '12' });
  for (const q of [{ limit: '0' }, { limit: '1001' }, { after: 'x' }, { after: '0' }, { other: '1' }]) t.throws(() => parseDeliveriesQuery(q), JSON.stringify(q));
});

t.test('the defaults CONTRACT 19 names: 10 s timeout, 2 s to 1 h backoff for 3 days, 24 h rotation, 20 per organization, https and public addresses only', async (t) => {
  const w = loadConfig({}).webhooks;
  t.match(w, {
    timeoutMs: 10_000,
    retryBaseMs: DEFAULT_RETRY.baseMs,
    retryMaxMs: DEFAULT_RETRY.maxMs,
    retryForMs: DEFAULT_RETRY.retryForMs,
    rotationOverlapMs: 86_400_000,
    maxPerOrg: 20,
    allowHttp: false,
    allowPrivate: false,
  });
  t.same(DEFAULT_RETRY, { baseMs: 2000, maxMs: 3_600_000, retryForMs: 3 * 86_400_000 });
});
