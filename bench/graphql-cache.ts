/**
 * Micro-bench of the GraphQL executor (no HTTP): one `evaluate` query, cached (the compiled query
 * is reused: no parse, validate or compile) versus uncached (the cache is cleared before each run),
 * and REST's direct service call for reference.
 *
 *   npm run build && node dist/bench/graphql-cache.js [--iterations 20000]
 */
import { GraphQLExecutor } from '../src/graphql/execute.js';
import { evaluationEnv } from '../src/graphql/evaluation-resolvers.js';
import { buildSnapshot } from '../src/engine/index.js';
import { evaluateHere } from '../src/evaluation/evaluate.js';
import { SharedRateLimiter } from '../src/ratelimit/shared-limiter.js';
import type { Authenticated } from '../src/auth/authenticate.js';
import type { Flag, FlagConfig, Organization } from '../src/domain/types.js';
import { createLogger } from '../src/util/log.js';
import { graphqlBatchQuery } from './scenarios.js';
import { numberArg } from './argv.js';

const iterations = numberArg('iterations', 20_000);

const now = new Date().toISOString();
const org: Organization = { id: 'o1', name: 'bench', subscriptionActive: true, environments: ['production'], applications: ['default'], killSwitch: [], version: 1 };
const flag: Flag = {
  name: 'checkout', project: 'default', type: 'boolean', description: null, tags: [], isArchived: false,
  variants: [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'off', value: false, valueType: 'boolean' }],
  environments: ['production'], dependencies: [], createdAt: now, updatedAt: now,
};
const config: FlagConfig = {
  stage: 'production', clientId: null, enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100,
  rules: [{ id: 'nl', priority: 1, conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'on', percentage: 100 }] }],
  activeFrom: null, activeUntil: null, enrollmentCutoff: null,
};
// `checkout` and bench-flag-0…99 (the HTTP bench's 100-alias document, bench/scenarios.ts).
const benchFlags = Array.from({ length: 100 }, (_, i): Flag => ({ ...flag, name: `bench-flag-${i}` }));
const snapshot = buildSnapshot(org, [flag, ...benchFlags], new Map([['checkout', [config]], ...benchFlags.map((f) => [f.name, [config]] as [string, FlagConfig[]])]));
const auth: Authenticated = {
  principal: { keyId: 'k1', keyName: 'bench', orgId: 'o1', permissions: new Set(['CanEvaluate']), application: 'default', environment: null },
  snapshot,
};
const rt = {
  limiter: SharedRateLimiter.create({ eval: 1e12, mgmt: 1e12 }),
  snapshots: { peek: () => snapshot },
  now: Date.now,
  evalCounts: { count: () => {} },
  pool: null,
} as never;

const executor = new GraphQLExecutor(createLogger('silent'), { maxDepth: 15, maxEvaluations: 100 });
const query = '{ evaluate(key: "checkout", userId: "user-1", stage: "production", context: {country: "NL"}) { key variant reason { code } } }';
const req = { query, variables: null, operationName: null };

async function measure(label: string, run: () => Promise<unknown> | unknown, n: number): Promise<number> {
  for (let i = 0; i < Math.min(n, 2000); i++) await run(); // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await run();
  const us = Number(process.hrtime.bigint() - start) / 1000 / n;
  console.log(`${label.padEnd(44)} ${us.toFixed(2).padStart(9)} µs/op`);
  return us;
}

const check = await executor.execute(rt, auth, req);
if (JSON.stringify(JSON.parse(check)) !== '{"data":{"evaluate":{"key":"on","variant":true,"reason":{"code":"rule_matched"}}}}') {
  throw new Error(`unexpected answer ${check}`);
}
console.log(`graphql-cache micro-bench, ${iterations} iterations, node ${process.version}`);
const cached = await measure('GraphQL evaluate, cached compiled query', () => executor.execute(rt, auth, req), iterations);
const uncached = await measure('GraphQL evaluate, uncached (parse+validate+jit)', () => {
  executor.cache.clear();
  return executor.execute(rt, auth, req);
}, Math.max(200, Math.floor(iterations / 20)));
const input = { userId: 'user-1', stage: 'production', clientId: null, context: { country: 'NL' } };
await measure('service call only (what REST runs)', () => evaluateHere(auth, 'checkout', input, Date.now()), iterations);
console.log(`uncached / cached: ${(uncached / cached).toFixed(0)}x`);

// The 100-alias batch: the evaluation plan (plan.ts) against graphql-jit on the same prepared document.
const batchQuery = graphqlBatchQuery(100, 100);
const batch = executor.prepare(batchQuery, null);
if (!batch.ok || batch.plan === null) throw new Error('the 100-alias document has no plan');
const ctx = { env: evaluationEnv(rt), rt, auth, deferredAny: false };
const a = await executor.run(batch, ctx, null);
const b = await executor.runGeneric(batch, ctx, null);
if (a !== b) throw new Error(`plan and graphql-jit differ:\n${a.slice(0, 300)}\n${b.slice(0, 300)}`);
const n = Math.max(200, Math.floor(iterations / 10));
const jit = await measure('100-alias document, graphql-jit', () => executor.runGeneric(batch, ctx, null), n);
const planned = await measure('100-alias document, evaluation plan', () => executor.run(batch, ctx, null), n);
console.log(`evaluations/s on this thread: graphql-jit ${(100e6 / jit).toFixed(0)}, plan ${(100e6 / planned).toFixed(0)} (${(jit / planned).toFixed(2)}x)`);
