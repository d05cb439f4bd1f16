/** Settings (README.md, "Configuration"): validated once; a bad value is refused with a message naming the variable. */
import t, { type Test } from 'tap';
import { ConfigError, defaultFrontThreads, loadConfig } from '../../../src/config.js';

function refused(t: Test, env: Record<string, string>, variable: string, secret?: string) {
  try {
    loadConfig(env);
    t.fail(`${JSON.stringify(env)} should be refused`);
  } catch (err) {
    t.ok(err instanceof ConfigError, 'a ConfigError');
    t.match((err as Error).message, new RegExp(`\\b${variable}\\b`), `the message names ${variable}`);
    if (secret !== undefined) t.notOk((err as Error).message.includes(secret), 'the message does not echo the secret');
  }
}

t.test('defaults', async (t) => {
  const c = loadConfig({});
  t.match(c, {
    host: '127.0.0.1', port: 8080, dataDir: './data', databaseUrl: null, natsUrl: null, bootstrapAdminKey: null,
    operatorToken: null, graphqlMaxDepth: 15, graphqlMaxEvaluations: 100, keyCacheTtlMs: 60_000, requireNativeHttp: false,
    httpFront: 'auto', shutdownGraceMs: 10_000,
  });
  t.ok(c.rateLimitEval > 0 && c.rateLimitMgmt > 0, 'documented positive rate defaults');
  t.same(loadConfig({ PORT: '', VEXIL_BOOTSTRAP_ADMIN_KEY: '' }).port, 8080, 'empty strings count as unset');
  t.equal(loadConfig({ VEXIL_BOOTSTRAP_ADMIN_KEY: '' }).bootstrapAdminKey, null);
});

t.test('valid values are read', async (t) => {
  const key = 'ab'.repeat(32);
  const c = loadConfig({
    HOST: '0.0.0.0', PORT: '0', VEXIL_BOOTSTRAP_ADMIN_KEY: key, VEXIL_OPERATOR_TOKEN: 'x'.repeat(16),
    VEXIL_RATE_LIMIT_EVAL: '5', VEXIL_RATE_LIMIT_MGMT: '0.5', DATABASE_URL: 'postgresql://u@h/db', VEXIL_REQUIRE_NATIVE_HTTP: 'true',
    VEXIL_HTTP_FRONT: 'node', VEXIL_SHUTDOWN_GRACE_MS: '2500',
  });
  t.match(c, { host: '0.0.0.0', port: 0, bootstrapAdminKey: key, operatorToken: 'x'.repeat(16), rateLimitEval: 5, rateLimitMgmt: 0.5, databaseUrl: 'postgresql://u@h/db', requireNativeHttp: true, httpFront: 'node', shutdownGraceMs: 2500 });
  t.equal(loadConfig({ PORT: '65535' }).port, 65535);
});

t.test('a bad PORT is refused naming PORT', async (t) => {
  for (const port of ['abc', '-1', '65536', '80.5', 'true']) refused(t, { PORT: port }, 'PORT');
});

t.test('a bad VEXIL_BOOTSTRAP_ADMIN_KEY is refused naming the variable, without echoing it', async (t) => {
  const good = '0123456789abcdef'.repeat(4);
  for (const bad of [good.toUpperCase(), good.slice(1), good + '0', 'z' + good.slice(1), ` ${good}`]) {
    refused(t, { VEXIL_BOOTSTRAP_ADMIN_KEY: bad }, 'VEXIL_BOOTSTRAP_ADMIN_KEY', bad.trim());
  }
});

t.test('other bad settings name their variable', async (t) => {
  refused(t, { VEXIL_OPERATOR_TOKEN: 'short' }, 'VEXIL_OPERATOR_TOKEN', 'short');
  refused(t, { VEXIL_RATE_LIMIT_EVAL: '0' }, 'VEXIL_RATE_LIMIT_EVAL');
  refused(t, { VEXIL_RATE_LIMIT_MGMT: '-5' }, 'VEXIL_RATE_LIMIT_MGMT');
  refused(t, { VEXIL_RATE_LIMIT_MGMT: 'lots' }, 'VEXIL_RATE_LIMIT_MGMT');
  refused(t, { DATABASE_URL: 'mysql://x' }, 'DATABASE_URL');
  refused(t, { VEXIL_KEY_CACHE_TTL_MS: '-1' }, 'VEXIL_KEY_CACHE_TTL_MS');
  refused(t, { VEXIL_REQUIRE_NATIVE_HTTP: 'yes' }, 'VEXIL_REQUIRE_NATIVE_HTTP');
  refused(t, { VEXIL_HTTP_FRONT: 'uws' }, 'VEXIL_HTTP_FRONT');
  refused(t, { VEXIL_SHUTDOWN_GRACE_MS: '-1' }, 'VEXIL_SHUTDOWN_GRACE_MS');
  refused(t, { VEXIL_LOG_LEVEL: 'verbose' }, 'VEXIL_LOG_LEVEL');
});

t.test('evaluation pool settings', async (t) => {
  const { availableParallelism } = await import('node:os');
  const c = loadConfig({});
  t.equal(c.evalQueueMax, 10_000, 'VEXIL_EVAL_QUEUE_MAX defaults to 10000');
  t.equal(c.evalHandoff, 'auto', 'VEXIL_EVAL_HANDOFF defaults to auto');
  t.equal(c.evalWorkers, availableParallelism(), 'VEXIL_EVAL_WORKERS defaults to the cores this process may use');
  t.equal(c.frontThreads, Math.min(16, availableParallelism()), 'VEXIL_FRONT_THREADS defaults to the cores this process may use, at most 16 (CONTRACT 20)');
  // This machine has too few cores to reach the cap: the default's rule, on the counts that do.
  t.same([1, 2, 8, 16, 17, 64, 256].map(defaultFrontThreads), [1, 2, 8, 16, 16, 16, 16], 'one per core, at most 16 (a 64-core host runs 16)');
  t.equal(c.frontAccept, 'auto', 'VEXIL_FRONT_ACCEPT defaults to auto');
  t.match(loadConfig({ VEXIL_FRONT_THREADS: '1', VEXIL_FRONT_ACCEPT: 'reuseport' }), { frontThreads: 1, frontAccept: 'reuseport' });
  refused(t, { VEXIL_FRONT_THREADS: '0' }, 'VEXIL_FRONT_THREADS');
  refused(t, { VEXIL_FRONT_ACCEPT: 'fork' }, 'VEXIL_FRONT_ACCEPT');
  t.match(loadConfig({ VEXIL_EVAL_QUEUE_MAX: '50', VEXIL_EVAL_HANDOFF: 'always' }), { evalQueueMax: 50, evalHandoff: 'always' });
  refused(t, { VEXIL_EVAL_QUEUE_MAX: '0' }, 'VEXIL_EVAL_QUEUE_MAX');
  refused(t, { VEXIL_EVAL_QUEUE_MAX: 'lots' }, 'VEXIL_EVAL_QUEUE_MAX');
  refused(t, { VEXIL_EVAL_HANDOFF: 'sometimes' }, 'VEXIL_EVAL_HANDOFF');
});

t.test('slow clients and event streams: the documented bounds are the defaults and the most allowed', async (t) => {
  const c = loadConfig({});
  t.same(c.clientTimeouts, { headMs: 10_000, bodyMs: 30_000, idleMs: 120_000 }, 'head 10 s, body 30 s, idle 120 s');
  t.equal(c.sseMaxStreamsPerKey, 1000, 'VEXIL_SSE_MAX_STREAMS_PER_KEY defaults to 1000');
  t.equal(c.sseKeyRecheckMs, 60_000, 'VEXIL_SSE_KEY_RECHECK_MS defaults to a minute');
  t.match(loadConfig({ VEXIL_HEAD_TIMEOUT_MS: '500', VEXIL_BODY_TIMEOUT_MS: '700', VEXIL_IDLE_TIMEOUT_MS: '900', VEXIL_SSE_KEY_RECHECK_MS: '200' }), {
    clientTimeouts: { headMs: 500, bodyMs: 700, idleMs: 900 },
    sseKeyRecheckMs: 200,
  });
  refused(t, { VEXIL_HEAD_TIMEOUT_MS: '10001' }, 'VEXIL_HEAD_TIMEOUT_MS');
  refused(t, { VEXIL_BODY_TIMEOUT_MS: '30001' }, 'VEXIL_BODY_TIMEOUT_MS');
  refused(t, { VEXIL_IDLE_TIMEOUT_MS: '120001' }, 'VEXIL_IDLE_TIMEOUT_MS');
  refused(t, { VEXIL_SSE_KEY_RECHECK_MS: '60001' }, 'VEXIL_SSE_KEY_RECHECK_MS');
  refused(t, { VEXIL_SSE_MAX_STREAMS_PER_KEY: '0' }, 'VEXIL_SSE_MAX_STREAMS_PER_KEY');
});

t.test('flag insights: counts are written at least every 10 s (CONTRACT 18)', async (t) => {
  const c = loadConfig({});
  t.match(c, { insights: true, insightsFlushMs: 10_000, insightsMaxPending: 1_000_000, insightsStatusMs: 1000 }, 'on, every 10 s, 1,000,000 counters, statuses every second');
  t.match(loadConfig({ VEXIL_INSIGHTS: 'off', VEXIL_INSIGHTS_FLUSH_MS: '50' }), { insights: false, insightsFlushMs: 50 });
  refused(t, { VEXIL_INSIGHTS_FLUSH_MS: '10001' }, 'VEXIL_INSIGHTS_FLUSH_MS');
  refused(t, { VEXIL_INSIGHTS_FLUSH_MS: '49' }, 'VEXIL_INSIGHTS_FLUSH_MS');
  refused(t, { VEXIL_INSIGHTS: 'maybe' }, 'VEXIL_INSIGHTS');
});

t.test('VEXIL_CLUSTER_SECRET: 32 characters or more, checked at start-up, never echoed', async (t) => {
  t.equal(loadConfig({}).clusterSecret, null, 'unset by default');
  const secret = 's'.repeat(32);
  t.equal(loadConfig({ VEXIL_CLUSTER_SECRET: secret }).clusterSecret, secret);
  const short = 'short-cluster-secret-31-chars!!';
  t.equal(short.length, 31);
  refused(t, { VEXIL_CLUSTER_SECRET: short }, 'VEXIL_CLUSTER_SECRET', short);
});
