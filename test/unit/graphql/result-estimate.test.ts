/**
 * The GraphQL result estimate (src/graphql/result-estimate.ts; docs/graphql.md, "Limits"): its rules per
 * list field, `first` on lists and connections (on a copy of the schema with the flag list's
 * paging fields), mutations growing lists, the snapshot's list maxima, and a property test: on
 * generated documents against small generated organizations, never below the number of values
 * the executed result really holds.
 */
import fc from 'fast-check';
import { buildSchema, executeSync, getIntrospectionQuery, getOperationAST, parse, type GraphQLSchema } from 'graphql';
import t from 'tap';
import type { Authenticated } from '../../../src/auth/authenticate.js';
import type { Flag, FlagConfig, Organization } from '../../../src/domain/types.js';
import { buildSnapshot, compileFlag, listMaxima, putFlag, type OrgSnapshot } from '../../../src/engine/index.js';
import { GraphQLExecutor, vexilSchema } from '../../../src/graphql/execute.js';
import { estimateResult, resultShape, resultStats, resultViolation, type ResultStats } from '../../../src/graphql/result-estimate.js';
import { typeDefs } from '../../../src/graphql/schema.js';
import { createLogger } from '../../../src/util/log.js';

const STATS: ResultStats = {
  flags: 100_000, variants: 2, tags: 1, environments: 3, dependencies: 0, dependencyVariants: 0, configs: 1, rules: 1, conditions: 1,
  allocations: 1, ruleSegments: 2, orgEnvironments: 3, orgApplications: 1, killSwitch: 0, segments: 40, segmentConditions: 3,
  managementKeys: 1000, largest: 100_000,
};

const estimate = (q: string, variables: Record<string, unknown> | null = null, stats = STATS, schema: GraphQLSchema = vexilSchema()) => {
  const doc = parse(q);
  return estimateResult(resultShape(schema, doc, getOperationAST(doc)!), stats, variables);
};

const ATTACK_SELECTION =
  'flags { name project tags variants { key value } configs { stage enabled rules { id conditions { field operator value } allocations { variantKey percentage } } } }';
const attack = (aliases: number) => `{ ${Array.from({ length: aliases }, (_, i) => `a${i}: ${ATTACK_SELECTION}`).join('\n')} }`;

t.test('rules per list field', async (t) => {
  t.equal(estimate('{ flags { name } }'), 100_000, 'flags { name } over 100,000 flags: 100,000 (under the default 200,000)');
  t.equal(estimate('{ flags { name project } }'), 200_000, 'each field selected under a list counts');
  t.equal(estimate('{ a: flags { name } b: flags { name } }'), 200_000, 'aliases count');
  // Per flag: name, project, tags 1, variants 2 × 2, configs 1 × (stage, enabled, rules 1 × (id, 3, 2)) = 15.
  t.equal(estimate(attack(1)), 1_500_000);
  t.equal(estimate(attack(20)), 30_000_000, '20 aliases of a full flags selection: 30,000,000');
  t.equal(estimate('{ flags { ...F ... on Flag { tags } } } fragment F on Flag { name variants { key } }'), 100_000 * (1 + 2 + 1), 'fragments expanded');
  t.equal(estimate('{ flags { ...F ...F } } fragment F on Flag { name }'), 200_000, 'a fragment counts at every spread');
  t.equal(estimate('{ flag(name: "x") { name tags variants { key value valueType } } }'), 1 + 1 + 2 * 3, 'a single flag: its lists at their maxima');
  t.equal(estimate('{ flagConfigs(name: "x") { stage rules { id } } }'), 1 * (1 + 1));
  t.equal(estimate('{ flagEnvironments(name: "x") environments applications killSwitch { flag } }'), 3 + 3 + 1 + 1, 'an empty list still counts one (it could be null)');
  t.equal(estimate('{ managementKeys { id permissions } }'), 1000 * (1 + 5), 'keys: 1,000 (not in the snapshot); permissions: the enum\'s 5 values');
  t.equal(estimate('{ auditLog { id before after } }'), 100 * 3, 'auditLog: its default page of 100');
  t.equal(estimate('{ auditLog(first: 7) { id } }'), 7, 'auditLog: first');
  t.equal(estimate('{ auditLog(first: 100000) { id } }'), 500, 'auditLog: at most 500');
  t.equal(estimate('{ __typename evaluate(key: "f", userId: "u", stage: "s") { key variant reason { code message ruleId } } }'), 6);
  t.equal(estimate('{ flags { __typename } }'), 100_000, '__typename counts');
  const intro = estimate(getIntrospectionQuery());
  t.ok(intro > 1000 && intro < 200_000, `the standard introspection query: ${intro}, under the default`);
  // `__schema` depends on no data: its estimate is the exact count of the leaves it answers.
  const answered = executeSync({ schema: vexilSchema(), document: parse(getIntrospectionQuery()) });
  const leaves = (v: unknown): number =>
    Array.isArray(v) ? v.reduce((n: number, x) => n + leaves(x), 0) : v !== null && typeof v === 'object' ? Object.values(v).reduce((n: number, x) => n + leaves(x), 0) : 1;
  t.equal(intro, leaves(answered.data), 'the introspection query: exactly the values it answers');
  t.equal(estimate('{ a: __schema { types { name } } b: __schema { types { name } } }'), 2 * leaves(executeSync({ schema: vexilSchema(), document: parse('{ __schema { types { name } } }') }).data), 'each alias counts');
  t.ok(estimate('{ __type(name: "Flag") { fields { name } } }') >= Object.keys(vexilSchema().getTypeMap().Flag.toConfig().fields ?? {}).length, '__type: its lists at the largest in the schema');
  const empty = { ...STATS, flags: 0, variants: 0, tags: 0, configs: 0, largest: 1000 };
  t.equal(estimate(attack(20), null, empty), 20, 'an empty organization: one value per field (null or an empty list)');
  t.match(resultViolation(30_000_000, 200_000), /estimated at up to 30000000 values.*VEXIL_GRAPHQL_MAX_RESULT allows at most 200000.*flagConnection\(first:\) or flags\(first:\)/);
  t.equal(resultViolation(200_000, 200_000), null, 'at the limit: allowed');
});

t.test('segments: the organization\'s segments, their conditions, a rule\'s segment names', async (t) => {
  t.equal(estimate('{ segments { name conditions { field operator value } } }'), 40 * (1 + 3 * 3), 'segments × (name + conditions × 3)');
  t.equal(estimate('{ segment(name: "s") { name conditions { field } } }'), 1 + 3);
  t.equal(estimate('{ flag(name: "x") { configs { rules { segments } } } }'), 2, "a rule's segments at their maximum");
  const f = { name: 'f', project: 'p', type: 'boolean', description: null, tags: [], isArchived: false, variants: [], environments: ['e'], dependencies: [], createdAt: '', updatedAt: '' } as Flag;
  const rule = { id: 'r', priority: 1, conditions: [], segments: ['a', 'b', 'c'], allocations: [] };
  const org = { id: 'o', name: 'o', subscriptionActive: true, environments: ['e'], applications: ['p'], killSwitch: [], version: 1 } as Organization;
  const cond = { field: 'u', operator: '==', value: 1 };
  const seg = (name: string, n: number) => ({ name, description: null, application: null, conditions: Array(n).fill(cond), createdAt: '', updatedAt: '' });
  const snap = buildSnapshot(org, [f], new Map([['f', [{ stage: 'e', clientId: null, enabled: true, defaultVariantKey: 'on', rolloutPercentage: 100, rules: [rule], activeFrom: null, activeUntil: null, enrollmentCutoff: null } as FlagConfig]]]), [seg('a', 2), seg('b', 5)]);
  const stats = resultStats(snap);
  t.match(stats, { segments: 2, segmentConditions: 5, ruleSegments: 3 }, 'read from the snapshot');
});

t.test('first: on any list field, and on a connection for its nodes', async (t) => {
  // The flag list's paging fields (docs/graphql.md, "Paging and searching the flag list") are in the real schema.
  const paged = buildSchema(typeDefs);
  t.ok(paged.getType('FlagConnection'), 'the test schema has the connection');
  const est = (q: string, v: Record<string, unknown> | null = null) => estimate(q, v, STATS, paged);
  t.equal(est('{ flags(first: 10) { name } }'), 10);
  t.equal(est('{ flags(first: 1000000) { name } }'), 100_000, 'first past the flag count: the flag count');
  t.equal(est('{ flags { name } }'), 100_000);
  t.equal(est('query($n: Int) { flags(first: $n) { name } }', { n: 25 }), 25, 'a variable');
  t.equal(est('query($n: Int = 40) { flags(first: $n) { name } }', {}), 40, "a variable's default");
  t.equal(est('query($n: Int) { flags(first: $n) { name } }', {}), 100_000, 'an absent variable: no bound');
  t.equal(est('{ flagConnection(first: 50) { nodes { name project } pageInfo { endCursor hasNextPage } totalCount } }'), 50 * 2 + 2 + 1, 'nodes ≤ first');
  t.equal(est('query($n: Int!) { flagConnection(first: $n) { nodes { name } } }', { n: 1000 }), 1000);
  t.equal(est(`{ ${Array.from({ length: 20 }, (_, i) => `a${i}: flags(first: 100) { name project tags }`).join(' ')} }`), 20 * 100 * 3);
  const doc = parse('{ flagConnection(first: 10) { nodes { name } } }');
  t.equal(resultShape(paged, doc, getOperationAST(doc)!).fixed, null, 'still depends on the snapshot (fewer flags than first)');
  t.equal(est('{ flagConnection(first: 10) { nodes { name } } }', null), 10);
  t.equal(estimate('{ flagConnection(first: 10) { nodes { name } } }', null, { ...STATS, flags: 3 }, paged), 3, 'fewer flags than first');
});

t.test('mutations: lists grow by the document\'s own list items and mutation count', async (t) => {
  const create = (variants: number) =>
    `mutation { createFlag(input: {name: "x", project: "p", type: "string", variants: [${Array.from({ length: variants }, (_, i) => `{key: "v${i}", value: ${i}, valueType: "number"}`).join(', ')}]}) { name variants { key } } }`;
  t.ok(estimate(create(9)) >= 1 + 9, 'a flag created with 9 variants, in an organization whose longest has 2');
  t.equal(estimate(create(9)), 1 + 2 + 1 + 9, 'the maximum (2) + one mutation + 9 list items');
  const viaVariables = 'mutation($in: CreateFlagInput!) { createFlag(input: $in) { variants { key } } }';
  const input = { name: 'x', project: 'p', type: 'string', variants: Array.from({ length: 30 }, (_, i) => ({ key: `v${i}`, valueType: 'number', value: i })) };
  t.ok(estimate(viaVariables, { in: input }) >= 30, 'list items in variables count');
  t.equal(estimate('mutation { deleteFlag(name: "x") }'), 1, 'no list: fixed');
  t.equal(estimate('mutation { replaceEnvironments(environments: ["a", "b", "c", "d", "e"]) }'), 3 + 1 + 5);
});

t.test('snapshot list maxima: kept with the snapshot, raised by putFlag, upper bounds after deletes', async (t) => {
  const org = newOrg();
  const mk = (name: string, variants: number, tags: number): Flag => ({
    ...flagBase(name), variants: Array.from({ length: variants }, (_, i) => ({ key: `v${i}`, value: i, valueType: 'number' })), tags: Array.from({ length: tags }, (_, i) => `t${i}`),
  });
  const rules = (n: number, conditions: number) => Array.from({ length: n }, (_, i) => ({
    id: `r${i}`, priority: i, conditions: Array.from({ length: conditions }, () => ({ field: 'c', operator: '==' as const, value: 1 })), allocations: [{ variantKey: 'v0', percentage: 100 }],
  }));
  const snap = buildSnapshot(org, [mk('a', 2, 1), mk('b', 3, 0)], new Map([['a', [config('production', rules(2, 4))]]]));
  t.match(listMaxima(snap), { variants: 3, tags: 1, configs: 1, rules: 2, conditions: 4, allocations: 1 });
  putFlag(snap, compileFlag(mk('c', 7, 2), [config('production', []), config('staging', rules(5, 1))]));
  t.match(listMaxima(snap), { variants: 7, tags: 2, configs: 2, rules: 5, conditions: 4 }, 'raised by the new flag');
  snap.flags.delete('c');
  t.match(listMaxima(snap), { variants: 7, configs: 2, rules: 5 }, 'a deletion leaves an upper bound');
  t.equal(resultStats(snap).flags, 2, 'the flag count is the live one');
  const plain: OrgSnapshot = { org, flags: new Map([['a', compileFlag(mk('a', 4, 0), [])]]) };
  t.match(listMaxima(plain), { variants: 4 }, 'a snapshot built another way: computed on first use');
});

// ---- property: never below the true value count ---------------------------------------------------

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const now = '2026-01-01T00:00:00.000Z';
const ENVS = ['development', 'staging', 'production'];
const newOrg = (killSwitch = 0): Organization => ({
  id: 'o1', name: 'org', subscriptionActive: true, environments: ENVS, applications: ['default', 'web'],
  killSwitch: Array.from({ length: killSwitch }, (_, i) => ({ flag: `f${i}`, application: null, environment: null })), version: 1,
});
const flagBase = (name: string): Flag => ({
  name, project: 'default', type: 'number', description: null, tags: [], isArchived: false, variants: [], environments: ENVS, dependencies: [], createdAt: now, updatedAt: now,
});
const config = (stage: string, rules: FlagConfig['rules'], clientId: string | null = null): FlagConfig => ({
  stage, clientId, enabled: true, defaultVariantKey: 'v0', rolloutPercentage: 100, rules, activeFrom: null, activeUntil: null, enrollmentCutoff: null,
});

/** A small organization: flags with random list lengths (values scalars, so a JSON leaf is a value). */
function randomOrg(r: () => number): OrgSnapshot {
  const n = Math.floor(r() * 6);
  const k = (max: number) => Math.floor(r() * (max + 1));
  const flags: Flag[] = [];
  const configs = new Map<string, FlagConfig[]>();
  for (let i = 0; i < n; i++) {
    const name = `f${i}`;
    flags.push({
      ...flagBase(name),
      tags: Array.from({ length: k(3) }, (_, j) => `t${j}`),
      variants: Array.from({ length: 1 + k(3) }, (_, j) => ({ key: `v${j}`, value: r() < 0.5 ? j : `s${j}`, valueType: 'number' })),
      environments: ENVS.slice(0, k(3)),
      dependencies: Array.from({ length: i === 0 ? 0 : k(2) }, () => ({ flag: `f${Math.floor(r() * i)}`, variants: r() < 0.5 ? null : Array.from({ length: k(3) }, (_, j) => `v${j}`) })),
    });
    configs.set(name, ENVS.slice(0, k(3)).map((stage, s) => config(stage, Array.from({ length: k(3) }, (_, j) => ({
      id: `r${s}${j}`, priority: j,
      conditions: Array.from({ length: k(3) }, () => ({ field: 'country', operator: '==' as const, value: 'NL' })),
      allocations: Array.from({ length: k(2) }, () => ({ variantKey: 'v0', percentage: 50 })),
    })), s === 2 && r() < 0.5 ? 'ios' : null)));
  }
  return buildSnapshot(newOrg(k(3)), flags, configs);
}

const OBJECT_FIELDS: Record<string, Record<string, string | null>> = {
  Flag: {
    name: null, project: null, type: null, description: null, tags: null, isArchived: null, environments: null, createdAt: null, updatedAt: null,
    variants: 'Variant', dependencies: 'FlagDependency', configs: 'FlagConfig', __typename: null,
  },
  Variant: { key: null, value: null, valueType: null, __typename: null },
  FlagDependency: { flag: null, variants: null },
  FlagConfig: { stage: null, clientId: null, enabled: null, defaultVariantKey: null, rolloutPercentage: null, rules: 'Rule', activeFrom: null, activeUntil: null, enrollmentCutoff: null },
  Rule: { id: null, priority: null, conditions: 'Condition', allocations: 'Allocation' },
  Condition: { field: null, operator: null, value: null },
  Allocation: { variantKey: null, percentage: null },
  KillSwitchRule: { flag: null, application: null, environment: null },
};

/** A random document over the read fields: aliases, repeats, inline fragments and named fragments. */
function randomDocument(r: () => number): string {
  const fragments: string[] = [];
  let alias = 0;
  const pick = <T>(a: T[]): T => a[Math.floor(r() * a.length)];
  const selection = (type: string, depth: number): string => {
    const fields = Object.keys(OBJECT_FIELDS[type]);
    const count = 1 + Math.floor(r() * 4);
    const parts: string[] = [];
    for (let i = 0; i < count; i++) {
      const f = pick(fields);
      const child = OBJECT_FIELDS[type][f];
      const name = r() < 0.3 ? `a${alias++}: ${f}` : f;
      if (child === null) parts.push(name);
      else if (depth < 4) parts.push(`${name} { ${selection(child, depth + 1)} }`);
      else parts.push(`${name} { __typename }`);
    }
    const roll = r();
    if (roll < 0.15) return `... on ${type} { ${parts.join(' ')} }`;
    if (roll < 0.3) {
      const fname = `F${fragments.length}`;
      fragments.push(`fragment ${fname} on ${type} { ${parts.join(' ')} }`);
      return r() < 0.5 ? `...${fname}` : `...${fname} ...${fname} ${parts[0]}`;
    }
    return parts.join(' ');
  };
  const roots: string[] = [];
  const count = 1 + Math.floor(r() * 4);
  for (let i = 0; i < count; i++) {
    const a = `r${i}: `;
    const existing = `f${Math.floor(r() * 7)}`; // sometimes missing: a null field
    roots.push(pick([
      () => `${a}flags { ${selection('Flag', 1)} }`,
      () => `${a}flag(name: "${existing}") { ${selection('Flag', 1)} }`,
      () => `${a}flagConfigs(name: "${existing}") { ${selection('FlagConfig', 2)} }`,
      () => `${a}flagEnvironments(name: "${existing}")`,
      () => `${a}environments ${a.replace('r', 's')}applications`,
      () => `${a}killSwitch { ${selection('KillSwitchRule', 1)} }`,
      () => `${a}__typename`,
    ])());
  }
  return `{ ${roots.join(' ')} } ${fragments.join(' ')}`;
}

/** Values in a JSON result: every scalar leaf (null included) and every scalar list item. */
function countValues(v: unknown): number {
  if (Array.isArray(v)) return v.reduce((n: number, x) => n + (typeof x === 'object' && x !== null ? countValues(x) : 1), 0);
  if (typeof v === 'object' && v !== null) return Object.values(v).reduce((n: number, x) => n + (typeof x === 'object' && x !== null ? countValues(x) : 1), 0);
  return 1;
}

t.test('property: the estimate is never below the values a result really holds', async (t) => {
  const ex = new GraphQLExecutor(createLogger('silent'), { maxDepth: 15, maxEvaluations: 100, maxFields: 100_000, maxResult: 1e15 });
  let compared = 0;
  let exact = 0;
  await fc.assert(
    fc.asyncProperty(fc.integer(), fc.integer(), async (orgSeed, docSeed) => {
      const snap = randomOrg(rng(orgSeed));
      const q = randomDocument(rng(docSeed));
      const rt = { limiter: { charge() {} }, snapshots: { peek: () => snap }, now: () => Date.now(), evalCounts: { count() {} }, pool: null } as any;
      const auth: Authenticated = {
        principal: { keyId: 'k', keyName: 'k', orgId: 'o1', permissions: new Set(['CanRead', 'CanWrite', 'Admin']), application: null, environment: null },
        snapshot: snap,
      };
      const p = ex.prepare(q, null);
      if (!p.ok) throw new Error(`generated document refused: ${q}\n${JSON.stringify(p.errors)}`);
      const bound = ex.estimateResult(p, snap, null);
      const out = JSON.parse(String(await ex.answer(rt, auth, { query: q, variables: null, operationName: null })));
      const notFound = (out.errors ?? []).every((e: { extensions: { code: string } }) => e.extensions.code === 'NOT_FOUND');
      if (!notFound) throw new Error(`unexpected errors for ${q}: ${JSON.stringify(out.errors)}`);
      const real = countValues(out.data);
      compared++;
      if (real === bound) exact++;
      if (real > bound) throw new Error(`estimate ${bound} below the ${real} values of ${q}`);
    }),
    { numRuns: 1000 },
  );
  t.equal(compared, 1000);
  t.ok(exact > 20, `exact on ${exact} of 1000 (no repeats or missing flags there)`);
});
