import t, { type Test } from 'tap';
import { z } from 'zod';
import { VexilError } from '../../../src/domain/errors.js';
import type { Flag } from '../../../src/domain/types.js';
import {
  FLAG_NAME_RE,
  KEY_RE,
  NAME_RE,
  formatPath,
  isJsonValue,
  parseCreateFlag,
  parseCreateKey,
  parseCreateOrganization,
  parseDateTime,
  parseEvaluationBody,
  parseFlagEnvironments,
  parseFlagName,
  parseInput,
  parseKillSwitchRules,
  parseName,
  parseNameList,
  parsePatchOrganization,
  parseUpdateFlag,
  parseUpsertFlagConfig,
  validateConfigAgainstFlag,
  validateVariants,
  type UpsertFlagConfigInput,
} from '../../../src/domain/validation.js';

type Tap = Test;

/** Asserts fn throws BAD_REQUEST whose message contains every fragment; returns the message. */
function bad(tt: Tap, fn: () => unknown, ...fragments: string[]): string {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  if (!(err instanceof VexilError)) {
    tt.fail(`expected a VexilError, got ${err === undefined ? 'no error' : String(err)}`);
    return '';
  }
  tt.equal(err.code, 'BAD_REQUEST', `code for: ${err.message}`);
  tt.equal(err.status, 400);
  for (const f of fragments) tt.match(err.message, f, `message "${err.message}" names "${f}"`);
  return err.message;
}

const base = () => ({
  name: 'new-checkout',
  project: 'web',
  type: 'boolean',
  variants: [
    { key: 'on', value: true, valueType: 'boolean' },
    { key: 'off', value: false, valueType: 'boolean' },
  ],
});

const flag = (over: Partial<Flag> = {}): Flag => ({
  name: 'new-checkout',
  project: 'web',
  type: 'string',
  description: null,
  tags: [],
  isArchived: false,
  variants: [
    { key: 'a', value: 'A', valueType: 'string' },
    { key: 'b', value: 'B', valueType: 'string' },
  ],
  environments: ['production'],
  dependencies: [],
  createdAt: '2024-01-01T00:00:00.000Z',
  updatedAt: '2024-01-01T00:00:00.000Z',
  ...over,
});

const cfg = () => ({
  stage: 'production',
  enabled: true,
  defaultVariantKey: 'a',
  rolloutPercentage: 100,
  rules: [
    {
      id: 'r1',
      priority: 1,
      conditions: [{ field: 'country', operator: '==', value: 'DE' }],
      allocations: [
        { variantKey: 'a', percentage: 50 },
        { variantKey: 'b', percentage: 50 },
      ],
    },
  ],
});

const parsedCfg = (over: Partial<UpsertFlagConfigInput> = {}): UpsertFlagConfigInput => ({
  ...parseUpsertFlagConfig(cfg()),
  ...over,
});

t.test('regexes', async (t) => {
  t.ok(FLAG_NAME_RE.test('a'));
  t.ok(FLAG_NAME_RE.test('A.b_c-9'));
  t.ok(FLAG_NAME_RE.test('x'.repeat(128)));
  t.notOk(FLAG_NAME_RE.test('x'.repeat(129)));
  t.notOk(FLAG_NAME_RE.test('-a'));
  t.notOk(FLAG_NAME_RE.test('a b'));
  t.notOk(FLAG_NAME_RE.test(''));
  t.ok(NAME_RE.test('x'.repeat(64)));
  t.notOk(NAME_RE.test('x'.repeat(65)));
  t.notOk(NAME_RE.test('_x'));
  t.ok(KEY_RE.test('a'.repeat(64)));
  t.notOk(KEY_RE.test('A'.repeat(64)));
  t.notOk(KEY_RE.test('a'.repeat(63)));
  t.notOk(KEY_RE.test('g'.repeat(64)));
});

t.test('parseInput and path formatting', async (t) => {
  t.equal(formatPath(['variants', 1, 'valueType']), 'variants[1].valueType');
  t.equal(formatPath([0, 'flag'], 'rules'), 'rules[0].flag');
  t.equal(formatPath(['context', 'a-b']), 'context["a-b"]');
  const s = z.strictObject({ a: z.string(), n: z.number(), e: z.enum(['x', 'y']) });
  t.same(parseInput(s, { a: 'q', n: 1, e: 'x' }, 'thing'), { a: 'q', n: 1, e: 'x' });
  t.equal(bad(t, () => parseInput(s, { a: 'q', n: 1, e: 'x', colour: 1 }, 'thing')), "unknown field 'colour'");
  bad(t, () => parseInput(s, { a: 'q', n: 1, e: 'x', c1: 1, c2: 2 }, 'thing'), "unknown fields 'c1', 'c2'");
  t.equal(bad(t, () => parseInput(s, { n: 1, e: 'x' }, 'thing')), 'a is required');
  t.equal(bad(t, () => parseInput(s, { a: 1, n: 1, e: 'x' }, 'thing')), 'a: expected a string, got number');
  t.equal(bad(t, () => parseInput(s, { a: 'q', n: 1, e: 'z' }, 'thing')), "e: expected one of x, y, got 'z'");
  bad(t, () => parseInput(s, [], 'thing'), 'thing: expected an object, got array');
  // NaN / Infinity are not numbers here
  bad(t, () => parseInput(s, { a: 'q', n: Infinity, e: 'x' }, 'thing'), 'n: expected a finite number');
  bad(t, () => parseInput(s, { a: 'q', n: NaN, e: 'x' }, 'thing'), 'n: expected a finite number');
  // up to three issues are joined
  const m = bad(t, () => parseInput(s, {}, 'thing'), 'a is required', 'n is required', 'e is required');
  t.equal(m.split('; ').length, 3);
  t.equal(bad(t, () => parseInput(z.array(z.string()), ['a', 1], 'tags')), 'tags[1]: expected a string, got number');
  t.equal(bad(t, () => parseInput(z.string(), undefined, 'name')), 'name is required');
});

t.test('isJsonValue', async (t) => {
  t.ok(isJsonValue(null));
  t.ok(isJsonValue({ a: [1, 'x', true, null, { b: 2 }] }));
  t.ok(isJsonValue(Object.assign(Object.create(null), { a: 1 })));
  t.notOk(isJsonValue(undefined));
  t.notOk(isJsonValue(Infinity));
  t.notOk(isJsonValue({ a: () => 1 }));
  t.notOk(isJsonValue(new Date()));
  t.notOk(isJsonValue([1, NaN]));
});

t.test('parseDateTime', async (t) => {
  t.equal(parseDateTime('2024-05-01T12:00:00Z'), '2024-05-01T12:00:00.000Z');
  t.equal(parseDateTime('2024-05-01T12:00:00.5+02:00'), '2024-05-01T10:00:00.500Z');
  t.equal(parseDateTime('2024-05-01T12:00-0130'), '2024-05-01T13:30:00.000Z');
  t.equal(parseDateTime('2024-05-01t12:00:00.123456789+01'), '2024-05-01T11:00:00.123Z');
  t.equal(parseDateTime('2024-02-29T00:00:00Z'), '2024-02-29T00:00:00.000Z');
  t.equal(parseDateTime('0050-01-01T00:00:00Z'), '0050-01-01T00:00:00.000Z');
  t.equal(parseDateTime(new Date('2024-05-01T12:00:00Z')), '2024-05-01T12:00:00.000Z');
  bad(t, () => parseDateTime('2024-05-01T12:00:00'), 'DateTime:', 'no time zone');
  bad(t, () => parseDateTime('2024-05-01T12:00:00', 'activeFrom'), 'activeFrom:', 'no time zone');
  bad(t, () => parseDateTime('2024-05-01'), 'not an ISO 8601 date-time');
  bad(t, () => parseDateTime('yesterday'), 'not an ISO 8601 date-time');
  bad(t, () => parseDateTime('2023-02-29T00:00:00Z'), 'invalid day');
  bad(t, () => parseDateTime('2024-13-01T00:00:00Z'), 'invalid month');
  bad(t, () => parseDateTime('2024-01-01T24:00:00Z'), 'invalid time');
  bad(t, () => parseDateTime('2024-01-01T00:00:00+25:00'), 'invalid time zone offset');
  bad(t, () => parseDateTime(1714564800000, 'activeUntil'), 'activeUntil:', 'got number');
  bad(t, () => parseDateTime(new Date('nope')), 'invalid date');
});

t.test('parseName / parseFlagName', async (t) => {
  t.equal(parseName('staging', 'to'), 'staging');
  bad(t, () => parseName('bad name', 'to'), 'to: must start with a letter or digit');
  bad(t, () => parseName(undefined, 'to'), 'to is required');
  t.equal(parseFlagName('my.flag-1'), 'my.flag-1');
  bad(t, () => parseFlagName('x'.repeat(129)), 'name: must start', 'at most 128');
});

t.test('parseNameList', async (t) => {
  t.same(parseNameList(['development', 'production'], 'environments'), ['development', 'production']);
  bad(t, () => parseNameList([], 'environments'), 'environments: must not be empty');
  bad(t, () => parseNameList('production', 'environments'), 'environments: expected an array');
  bad(t, () => parseNameList(['ok', 'bad name'], 'applications'), 'applications[1]: must start with a letter or digit');
  bad(t, () => parseNameList(['ok', 'x'.repeat(65)], 'applications'), 'applications[1]:');
  bad(t, () => parseNameList(['Prod', 'staging', 'prod'], 'environments'), 'environments[2]: duplicate name', 'case-insensitive');
});

t.test('parseFlagEnvironments allows empty lists', async (t) => {
  t.same(parseFlagEnvironments([]), []);
  t.same(parseFlagEnvironments(['a', 'b']), ['a', 'b']);
  bad(t, () => parseFlagEnvironments(['a', 'A']), 'environments[1]: duplicate');
  bad(t, () => parseFlagEnvironments(['a b']), 'environments[0]:');
});

t.test('parseCreateFlag', async (t) => {
  t.test('valid input is normalised', async (t) => {
    const out = parseCreateFlag({
      ...base(),
      description: 'Checkout v2',
      tags: [' ui ', 'ui', 'beta'],
      environments: ['production'],
      dependencies: [{ flag: 'parent' }, { flag: 'other', variants: ['x', 'x', 'y'] }],
    });
    t.same(out, {
      name: 'new-checkout',
      project: 'web',
      type: 'boolean',
      description: 'Checkout v2',
      tags: ['ui', 'beta'],
      variants: [
        { key: 'on', value: true, valueType: 'boolean' },
        { key: 'off', value: false, valueType: 'boolean' },
      ],
      environments: ['production'],
      dependencies: [
        { flag: 'parent', variants: null },
        { flag: 'other', variants: ['x', 'y'] },
      ],
    });
  });
  t.test('defaults; environments stays absent', async (t) => {
    const out = parseCreateFlag({ ...base(), variants: [] });
    t.equal(out.description, null);
    t.same(out.tags, []);
    t.same(out.dependencies, []);
    t.same(out.variants, []);
    t.notOk('environments' in out);
    const nulls = parseCreateFlag({ ...base(), tags: null, environments: null, dependencies: null, description: null });
    t.same(nulls.tags, []);
    t.notOk('environments' in nulls);
  });
  t.test('accepts GraphQL null-prototype input objects', async (t) => {
    const input = Object.assign(Object.create(null), base());
    t.equal(parseCreateFlag(input).name, 'new-checkout');
  });
  t.test('rejections', async (t) => {
    bad(t, () => parseCreateFlag({ ...base(), colour: 'red' }), "unknown field 'colour'");
    bad(t, () => parseCreateFlag({ ...base(), name: 'bad name' }), 'name: must start with a letter or digit');
    bad(t, () => parseCreateFlag({ ...base(), name: '-x' }), 'name:');
    bad(t, () => parseCreateFlag({ ...base(), name: 'x'.repeat(129) }), 'name:');
    const { name: _n, ...noName } = base();
    bad(t, () => parseCreateFlag(noName), 'name is required');
    const { project: _p, ...noProject } = base();
    bad(t, () => parseCreateFlag(noProject), 'project is required');
    bad(t, () => parseCreateFlag({ ...base(), project: 'a b' }), 'project:');
    bad(t, () => parseCreateFlag({ ...base(), type: 'bool' }), "type: expected one of boolean, string, number, json, got 'bool'");
    const { variants: _v, ...noVariants } = base();
    bad(t, () => parseCreateFlag(noVariants), 'variants is required');
    bad(t, () => parseCreateFlag({ ...base(), description: 'x'.repeat(4097) }), 'description: must be at most 4096 characters');
    t.equal(parseCreateFlag({ ...base(), description: 'x'.repeat(4096) }).description?.length, 4096);
    bad(t, () => parseCreateFlag({ ...base(), description: 5 }), 'description: expected a string');
    bad(t, () => parseCreateFlag({ ...base(), tags: ['a', ''] }), 'tags[1]: must not be empty');
    bad(t, () => parseCreateFlag({ ...base(), tags: ['   '] }), 'tags[0]: must not be empty');
    bad(t, () => parseCreateFlag({ ...base(), tags: ['x'.repeat(65)] }), 'tags[0]: must be at most 64 characters');
    t.equal(parseCreateFlag({ ...base(), tags: ['x'.repeat(64)] }).tags?.[0].length, 64);
    bad(t, () => parseCreateFlag({ ...base(), tags: Array.from({ length: 65 }, (_, i) => `t${i}`) }), 'tags: must have at most 64 items');
    t.equal(parseCreateFlag({ ...base(), tags: Array.from({ length: 64 }, (_, i) => `t${i}`) }).tags?.length, 64);
    bad(t, () => parseCreateFlag({ ...base(), tags: [1] }), 'tags[0]: expected a string');
    bad(t, () => parseCreateFlag({ ...base(), environments: ['production', 'PRODUCTION'] }), 'environments[1]: duplicate');
    bad(t, () => parseCreateFlag({ ...base(), environments: ['a b'] }), 'environments[0]:');
    bad(t, () => parseCreateFlag({ ...base(), dependencies: [{ flag: 'p', extra: 1 }] }), "dependencies[0]: unknown field 'extra'");
    bad(t, () => parseCreateFlag({ ...base(), dependencies: [{ flag: 'bad name' }] }), 'dependencies[0].flag:');
    bad(t, () => parseCreateFlag({ ...base(), dependencies: [{ flag: 'p', variants: [''] }] }), 'dependencies[0].variants[0]: must not be empty');
    bad(t, () => parseCreateFlag({ ...base(), dependencies: [{ flag: 'p' }, { flag: 'p' }] }), 'dependencies[1].flag: duplicate');
    bad(t, () => parseCreateFlag({ ...base(), dependencies: [{ flag: 'new-checkout' }] }), 'dependencies[0].flag: a flag cannot depend on itself');
    bad(t, () => parseCreateFlag([]), 'flag: expected an object, got array');
    bad(t, () => parseCreateFlag(null), 'flag: expected an object, got null');
  });
  t.test('variants are checked against the type', async (t) => {
    bad(
      t,
      () => parseCreateFlag({ ...base(), variants: [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'x', value: 1, valueType: 'int' }] }),
      'variants[1].valueType: expected one of boolean, string, number, json',
    );
    bad(t, () => parseCreateFlag({ ...base(), variants: [{ key: 'on', value: 'yes', valueType: 'string' }] }), 'variants[0].valueType:', "flag type 'boolean'");
    bad(t, () => parseCreateFlag({ ...base(), variants: [{ key: 'on', value: 'true', valueType: 'boolean' }] }), 'variants[0].value: expected a boolean');
    bad(t, () => parseCreateFlag({ ...base(), variants: [{ key: 'on', value: true, valueType: 'boolean', colour: 1 }] }), "variants[0]: unknown field 'colour'");
    bad(t, () => parseCreateFlag({ ...base(), variants: [{ key: 'a', value: true, valueType: 'boolean' }, { key: 'a', value: false, valueType: 'boolean' }] }), "variants[1].key: duplicate variant key 'a'");
    bad(t, () => parseCreateFlag({ ...base(), variants: [{ key: '', value: true, valueType: 'boolean' }] }), 'variants[0].key: must not be empty');
    bad(t, () => parseCreateFlag({ ...base(), variants: [{ key: 'k'.repeat(129), value: true, valueType: 'boolean' }] }), 'variants[0].key: must be at most 128');
  });
});

t.test('validateVariants', async (t) => {
  t.same(validateVariants('string', [{ key: 'a', value: 'x', valueType: 'string' }]), [{ key: 'a', value: 'x', valueType: 'string' }]);
  t.same(validateVariants('number', [{ key: 'a', value: -1.5, valueType: 'number' }]), [{ key: 'a', value: -1.5, valueType: 'number' }]);
  t.same(
    validateVariants('json', [
      { key: 'a', value: { x: [1, 'y', null] }, valueType: 'json' },
      { key: 'b', value: null, valueType: 'json' },
      { key: 'c', valueType: 'json' },
      { key: 'd', value: 'str', valueType: 'json' },
    ]),
    [
      { key: 'a', value: { x: [1, 'y', null] }, valueType: 'json' },
      { key: 'b', value: null, valueType: 'json' },
      { key: 'c', value: null, valueType: 'json' },
      { key: 'd', value: 'str', valueType: 'json' },
    ],
  );
  t.same(validateVariants('boolean', []), []);
  // value must match valueType
  bad(t, () => validateVariants('boolean', [{ key: 'a', value: 1, valueType: 'boolean' }]), 'variants[0].value: expected a boolean', 'got number');
  bad(t, () => validateVariants('boolean', [{ key: 'a', valueType: 'boolean' }]), 'variants[0].value:', 'got null');
  bad(t, () => validateVariants('string', [{ key: 'a', value: 'ok', valueType: 'string' }, { key: 'b', value: 1, valueType: 'string' }]), 'variants[1].value: expected a string');
  bad(t, () => validateVariants('number', [{ key: 'a', value: '1', valueType: 'number' }]), 'variants[0].value: expected a finite number');
  bad(t, () => validateVariants('number', [{ key: 'a', value: Infinity, valueType: 'number' }]), 'variants[0].value:', 'Infinity');
  bad(t, () => validateVariants('number', [{ key: 'a', value: NaN, valueType: 'number' }]), 'variants[0].value:', 'NaN');
  bad(t, () => validateVariants('json', [{ key: 'a', value: { f: () => 1 }, valueType: 'json' }]), 'variants[0].value: expected a JSON value');
  // valueType must equal the flag's type
  bad(t, () => validateVariants('string', [{ key: 'a', value: true, valueType: 'boolean' }]), 'variants[0].valueType:', "flag type 'string'");
  bad(t, () => validateVariants('string', [{ key: 'a', value: 'x', valueType: 'text' as never }]), 'variants[0].valueType: expected one of boolean, string, number, json');
  // keys unique and 1..128
  bad(t, () => validateVariants('string', [{ key: 'a', value: 'x', valueType: 'string' }, { key: 'a', value: 'y', valueType: 'string' }]), "variants[1].key: duplicate variant key 'a'");
  t.equal(validateVariants('string', [{ key: 'a', value: 'x', valueType: 'string' }, { key: 'A', value: 'y', valueType: 'string' }]).length, 2);
  bad(t, () => validateVariants('string', [{ key: '', value: 'x', valueType: 'string' }]), 'variants[0].key:');
  bad(t, () => validateVariants('string', [{ key: 'k'.repeat(129), value: 'x', valueType: 'string' }]), 'variants[0].key:');
  t.equal(validateVariants('string', [{ key: 'k'.repeat(128), value: 'x', valueType: 'string' }]).length, 1);
  bad(t, () => validateVariants('bool' as never, []), "type: expected one of boolean, string, number, json, got 'bool'");
  bad(t, () => validateVariants('string', [null as never]), 'variants[0]: expected an object, got null');
  bad(t, () => validateVariants('string', 'x' as never), 'variants: expected an array');
});

t.test('parseUpdateFlag', async (t) => {
  t.same(parseUpdateFlag({}), {});
  t.same(parseUpdateFlag({ isArchived: true }), { isArchived: true });
  t.same(parseUpdateFlag({ description: null }), { description: null });
  t.same(parseUpdateFlag({ description: 'd', tags: ['a', 'a', 'b'] }), { description: 'd', tags: ['a', 'b'] });
  // null on a field with no null meaning is "not given"
  t.same(parseUpdateFlag({ type: null, tags: null, variants: null, isArchived: null, dependencies: null }), {});
  t.same(parseUpdateFlag({ dependencies: [{ flag: 'p', variants: null }] }), { dependencies: [{ flag: 'p', variants: null }] });
  t.same(
    parseUpdateFlag({ type: 'number', variants: [{ key: 'one', value: 1, valueType: 'number' }] }),
    { type: 'number', variants: [{ key: 'one', value: 1, valueType: 'number' }] },
  );
  // variants without type: structure and unique keys only (type checked by the caller)
  t.same(parseUpdateFlag({ variants: [{ key: 'a', value: 1, valueType: 'number' }] }), {
    variants: [{ key: 'a', value: 1, valueType: 'number' }],
  });
  bad(t, () => parseUpdateFlag({ variants: [{ key: 'a', valueType: 'number' }, { key: 'a', valueType: 'number' }] }), 'variants[1].key: duplicate');
  bad(t, () => parseUpdateFlag({ type: 'number', variants: [{ key: 'a', value: 'x', valueType: 'number' }] }), 'variants[0].value:');
  bad(t, () => parseUpdateFlag({ name: 'rename' }), "unknown field 'name'");
  bad(t, () => parseUpdateFlag({ type: 'bool' }), 'type: expected one of boolean, string, number, json');
  bad(t, () => parseUpdateFlag({ isArchived: 'yes' }), 'isArchived: expected a boolean, got string');
  bad(t, () => parseUpdateFlag({ tags: [''] }), 'tags[0]: must not be empty');
  bad(t, () => parseUpdateFlag({ description: 'x'.repeat(4097) }), 'description:');
  bad(t, () => parseUpdateFlag({ variants: [{ key: 'a', valueType: 'nope' }] }), 'variants[0].valueType:');
  bad(t, () => parseUpdateFlag({ dependencies: [{ flag: 'p' }, { flag: 'p' }] }), 'dependencies[1].flag: duplicate');
  bad(t, () => parseUpdateFlag('x'), 'flag update: expected an object, got string');
});

t.test('parseUpsertFlagConfig', async (t) => {
  t.test('valid input is normalised', async (t) => {
    const out = parseUpsertFlagConfig({
      ...cfg(),
      clientId: 'ios',
      activeFrom: '2024-01-01T00:00:00+01:00',
      activeUntil: '2024-02-01T00:00:00Z',
      enrollmentCutoff: 40,
      rules: [
        ...cfg().rules,
        { priority: 2, conditions: [{ field: 'userId', operator: 'in', value: ['u1'] }, { field: 'plan.tier', operator: '!=' }], allocations: [{ variantKey: 'b', percentage: 100 }] },
      ],
    });
    t.same(out, {
      stage: 'production',
      clientId: 'ios',
      enabled: true,
      defaultVariantKey: 'a',
      rolloutPercentage: 100,
      rules: [
        {
          id: 'r1',
          priority: 1,
          conditions: [{ field: 'country', operator: '==', value: 'DE' }],
          segments: [],
          allocations: [
            { variantKey: 'a', percentage: 50 },
            { variantKey: 'b', percentage: 50 },
          ],
        },
        {
          id: null,
          priority: 2,
          conditions: [
            { field: 'userId', operator: 'in', value: ['u1'] },
            { field: 'plan.tier', operator: '!=', value: null },
          ],
          segments: [],
          allocations: [{ variantKey: 'b', percentage: 100 }],
        },
      ],
      activeFrom: '2023-12-31T23:00:00.000Z',
      activeUntil: '2024-02-01T00:00:00.000Z',
      enrollmentCutoff: 40,
    });
  });
  t.test('defaults', async (t) => {
    const out = parseUpsertFlagConfig({ stage: 'dev', enabled: false, defaultVariantKey: 'a', rolloutPercentage: 0, rules: null, activeFrom: null });
    t.same(out, {
      stage: 'dev',
      clientId: null,
      enabled: false,
      defaultVariantKey: 'a',
      rolloutPercentage: 0,
      rules: [],
      activeFrom: null,
      activeUntil: null,
      enrollmentCutoff: null,
    });
  });
  t.test('rejections', async (t) => {
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), colour: 1 }), "unknown field 'colour'");
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), rules: [{ ...cfg().rules[0], weight: 1 }] }), "rules[0]: unknown field 'weight'");
    const { stage: _s, ...noStage } = cfg();
    bad(t, () => parseUpsertFlagConfig(noStage), 'stage is required');
    const { enabled: _e, ...noEnabled } = cfg();
    bad(t, () => parseUpsertFlagConfig(noEnabled), 'enabled is required');
    const { defaultVariantKey: _d, ...noDefault } = cfg();
    bad(t, () => parseUpsertFlagConfig(noDefault), 'defaultVariantKey is required');
    const { rolloutPercentage: _r, ...noRollout } = cfg();
    bad(t, () => parseUpsertFlagConfig(noRollout), 'rolloutPercentage is required');
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), stage: 'bad stage' }), 'stage:');
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), enabled: 'true' }), 'enabled: expected a boolean');
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), clientId: '' }), 'clientId: must not be empty');
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), rolloutPercentage: 101 }), 'rolloutPercentage: must be <= 100');
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), rolloutPercentage: -0.1 }), 'rolloutPercentage: must be >= 0');
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), rolloutPercentage: NaN }), 'rolloutPercentage: expected a finite number');
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), rolloutPercentage: '50' }), 'rolloutPercentage: expected a finite number, got string');
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), enrollmentCutoff: 100.5 }), 'enrollmentCutoff: must be <= 100');
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), enrollmentCutoff: -1 }), 'enrollmentCutoff: must be >= 0');
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), activeFrom: '2024-01-01T00:00:00' }), 'activeFrom:', 'no time zone');
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), activeUntil: 'soon' }), 'activeUntil:');
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), activeUntil: 5 }), 'activeUntil:');
    bad(
      t,
      () => parseUpsertFlagConfig({ ...cfg(), activeFrom: '2024-02-01T00:00:00Z', activeUntil: '2024-01-01T00:00:00Z' }),
      'activeFrom: must be before activeUntil',
    );
    bad(
      t,
      () => parseUpsertFlagConfig({ ...cfg(), activeFrom: '2024-01-01T01:00:00+01:00', activeUntil: '2024-01-01T00:00:00Z' }),
      'activeFrom: must be before activeUntil',
    );
    t.ok(parseUpsertFlagConfig({ ...cfg(), activeFrom: '2024-01-01T00:00:00Z' }).activeFrom);
    t.ok(parseUpsertFlagConfig({ ...cfg(), activeUntil: '2024-01-01T00:00:00Z' }).activeUntil);
    const rule = cfg().rules[0];
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), rules: [{ ...rule, priority: 1.5 }] }), 'rules[0].priority: expected an integer');
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), rules: [{ ...rule, priority: '1' }] }), 'rules[0].priority:');
    // GraphQL Int is 32-bit: a priority outside it could be written over REST but not read back.
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), rules: [{ ...rule, priority: 2 ** 31 }] }), 'rules[0].priority:');
    t.equal(parseUpsertFlagConfig({ ...cfg(), rules: [{ ...rule, priority: 2 ** 31 - 1 }] }).rules![0].priority, 2 ** 31 - 1);
    const { priority: _pr, ...noPriority } = rule;
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), rules: [noPriority] }), 'rules[0].priority is required');
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), rules: [rule, { ...rule, priority: 2 }] }), "rules[1].id: duplicate rule id 'r1'");
    t.equal(parseUpsertFlagConfig({ ...cfg(), rules: [{ ...rule, id: null }, { ...rule, id: null, priority: 2 }] }).rules?.length, 2);
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), rules: [{ ...rule, id: '' }] }), 'rules[0].id: must not be empty');
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), rules: [{ ...rule, allocations: [] }] }), 'rules[0].allocations: must not be empty');
    bad(
      t,
      () => parseUpsertFlagConfig({ ...cfg(), rules: [{ ...rule, allocations: [{ variantKey: 'a', percentage: 60 }, { variantKey: 'b', percentage: 30 }] }] }),
      'rules[0].allocations: percentages must sum to 100, got 90',
    );
    bad(
      t,
      () => parseUpsertFlagConfig({ ...cfg(), rules: [{ ...rule, allocations: [{ variantKey: 'a', percentage: 100 }, { variantKey: 'b', percentage: 0.000001 }] }] }),
      'rules[0].allocations: percentages must sum to 100',
    );
    // floating-point sums within tolerance pass
    t.ok(
      parseUpsertFlagConfig({
        ...cfg(),
        rules: [{ ...rule, allocations: [{ variantKey: 'a', percentage: 33.33 }, { variantKey: 'b', percentage: 33.33 }, { variantKey: 'c', percentage: 33.34 }] }],
      }),
    );
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), rules: [{ ...rule, allocations: [{ variantKey: 'a', percentage: 101 }] }] }), 'rules[0].allocations[0].percentage: must be <= 100');
    bad(
      t,
      () => parseUpsertFlagConfig({ ...cfg(), rules: [{ ...rule, allocations: [{ variantKey: 'a', percentage: 50 }, { variantKey: 'a', percentage: 50 }] }] }),
      "rules[0].allocations[1].variantKey: duplicate variant 'a'",
    );
    bad(t, () => parseUpsertFlagConfig({ ...cfg(), rules: [{ ...rule, allocations: [{ variantKey: 'a', percentage: 100, extra: 1 }] }] }), "rules[0].allocations[0]: unknown field 'extra'");
    const cond = (c: object) => ({ ...cfg(), rules: [{ ...rule, conditions: [{ field: 'ok', operator: '==', value: 1 }, c] }] });
    bad(t, () => parseUpsertFlagConfig(cond({ field: 'user-id', operator: '==', value: 1 })), "rules[0].conditions[1].field: invalid path 'user-id'");
    bad(t, () => parseUpsertFlagConfig(cond({ field: 'user id', operator: '==', value: 1 })), 'rules[0].conditions[1].field: invalid path');
    bad(t, () => parseUpsertFlagConfig(cond({ field: 'a..b', operator: '==', value: 1 })), 'rules[0].conditions[1].field:');
    bad(t, () => parseUpsertFlagConfig(cond({ field: '', operator: '==', value: 1 })), 'rules[0].conditions[1].field:');
    t.ok(parseUpsertFlagConfig(cond({ field: 'user.address.zip_code1', operator: '==', value: 1 })));
    bad(t, () => parseUpsertFlagConfig(cond({ field: 'a', operator: 'equals', value: 1 })), "rules[0].conditions[1].operator: expected one of ==", "got 'equals'");
    bad(t, () => parseUpsertFlagConfig(cond({ operator: '==', value: 1 })), 'rules[0].conditions[1].field is required');
    bad(t, () => parseUpsertFlagConfig(cond({ field: 'a', operator: 'in', value: 'DE' })), "rules[0].conditions[1].value: operator 'in' needs an array value, got string");
    bad(t, () => parseUpsertFlagConfig(cond({ field: 'a', operator: 'not_in' })), "rules[0].conditions[1].value: operator 'not_in' needs an array value, got null");
    t.ok(parseUpsertFlagConfig(cond({ field: 'a', operator: 'not_in', value: [] })));
    bad(t, () => parseUpsertFlagConfig(cond({ field: 'a', operator: 'starts_with', value: 1 })), "rules[0].conditions[1].value: operator 'starts_with' needs a string value");
    bad(t, () => parseUpsertFlagConfig(cond({ field: 'a', operator: '>=', value: '5' })), "rules[0].conditions[1].value: operator '>=' needs a number value");
    bad(t, () => parseUpsertFlagConfig(cond({ field: 'a', operator: '==', value: 1, negate: true })), "rules[0].conditions[1]: unknown field 'negate'");
    bad(t, () => parseUpsertFlagConfig([]), 'flag configuration: expected an object, got array');
  });
});

t.test('validateConfigAgainstFlag', async (t) => {
  t.doesNotThrow(() => validateConfigAgainstFlag(flag(), parsedCfg()));
  t.doesNotThrow(() => validateConfigAgainstFlag(flag(), parsedCfg({ rules: [] })));
  // defaultVariantKey and allocation keys must name variants of the flag
  bad(t, () => validateConfigAgainstFlag(flag(), parsedCfg({ defaultVariantKey: 'z' })), "defaultVariantKey: 'z' is not a variant of flag 'new-checkout'", 'a, b');
  bad(t, () => validateConfigAgainstFlag(flag({ variants: [] }), parsedCfg({ rules: [] })), 'defaultVariantKey:', 'no variants');
  const r = parsedCfg().rules![0];
  bad(
    t,
    () => validateConfigAgainstFlag(flag(), parsedCfg({ rules: [r, { ...r, id: 'r2', allocations: [{ variantKey: 'a', percentage: 50 }, { variantKey: 'c', percentage: 50 }] }] })),
    "rules[1].allocations[1].variantKey: 'c' is not a variant",
  );
  // flag-independent rules are enforced here too (inputs that did not come through parse)
  bad(t, () => validateConfigAgainstFlag(flag(), parsedCfg({ rules: [{ ...r, allocations: [] }] })), 'rules[0].allocations: must not be empty');
  bad(
    t,
    () => validateConfigAgainstFlag(flag(), parsedCfg({ rules: [{ ...r, allocations: [{ variantKey: 'a', percentage: 99 }] }] })),
    'rules[0].allocations: percentages must sum to 100',
  );
  bad(t, () => validateConfigAgainstFlag(flag(), parsedCfg({ rules: [r, { ...r }] })), "rules[1].id: duplicate rule id 'r1'");
  bad(t, () => validateConfigAgainstFlag(flag(), parsedCfg({ rules: [{ ...r, priority: 0.5 }] })), 'rules[0].priority: expected an integer');
  bad(t, () => validateConfigAgainstFlag(flag(), parsedCfg({ rules: [{ ...r, conditions: [{ field: 'a-b', operator: '==', value: 1 }] }] })), 'rules[0].conditions[0].field: invalid path');
  bad(t, () => validateConfigAgainstFlag(flag(), parsedCfg({ rules: [{ ...r, conditions: [{ field: 'a b', operator: '==', value: 1 }] }] })), 'rules[0].conditions[0].field: invalid path');
  bad(t, () => validateConfigAgainstFlag(flag(), parsedCfg({ rules: [{ ...r, conditions: [{ field: 'a', operator: '~=', value: 1 }] }] })), 'rules[0].conditions[0].operator: expected one of');
  bad(t, () => validateConfigAgainstFlag(flag(), parsedCfg({ rules: [{ ...r, conditions: [{ field: 'a', operator: 'in', value: 1 }] }] })), "rules[0].conditions[0].value: operator 'in' needs an array value");
  bad(t, () => validateConfigAgainstFlag(flag(), parsedCfg({ rolloutPercentage: 150 })), 'rolloutPercentage: must be a number between 0 and 100');
  bad(t, () => validateConfigAgainstFlag(flag(), parsedCfg({ rolloutPercentage: NaN })), 'rolloutPercentage:');
  bad(t, () => validateConfigAgainstFlag(flag(), parsedCfg({ enrollmentCutoff: -5 })), 'enrollmentCutoff: must be a number between 0 and 100');
  t.doesNotThrow(() => validateConfigAgainstFlag(flag(), parsedCfg({ enrollmentCutoff: 0 })));
  bad(t, () => validateConfigAgainstFlag(flag(), parsedCfg({ activeFrom: '2024-01-01T00:00:00' })), 'activeFrom:', 'no time zone');
  bad(
    t,
    () => validateConfigAgainstFlag(flag(), parsedCfg({ activeFrom: '2024-01-01T00:00:00Z', activeUntil: '2024-01-01T00:00:00Z' })),
    'activeFrom: must be before activeUntil',
  );
  t.doesNotThrow(() => validateConfigAgainstFlag(flag(), parsedCfg({ activeFrom: '2024-01-01T00:00:00Z', activeUntil: '2024-01-01T00:00:00.001Z' })));
});

t.test('parseEvaluationBody', async (t) => {
  t.same(parseEvaluationBody({ userId: 'u1', stage: 'production' }), { userId: 'u1', stage: 'production', clientId: null, context: null });
  t.same(parseEvaluationBody({ userId: 'u1', stage: 'Production', clientId: 'ios', context: { country: 'DE', n: [1] } }), {
    userId: 'u1',
    stage: 'Production',
    clientId: 'ios',
    context: { country: 'DE', n: [1] },
  });
  t.same(parseEvaluationBody({ userId: 'u1', stage: 'p', clientId: null, context: null }), { userId: 'u1', stage: 'p', clientId: null, context: null });
  t.equal(parseEvaluationBody({ userId: 'u'.repeat(1024), stage: 'p' }).userId.length, 1024);
  t.equal(bad(t, () => parseEvaluationBody({ userId: 'u1' })), 'stage is required');
  t.equal(bad(t, () => parseEvaluationBody({ userId: 'u1', stage: null })), 'stage is required');
  t.equal(bad(t, () => parseEvaluationBody({ stage: 'p' })), 'userId is required');
  bad(t, () => parseEvaluationBody({}), 'stage is required', 'userId is required');
  bad(t, () => parseEvaluationBody({ userId: 'u', stage: '' }), 'stage: must not be empty');
  bad(t, () => parseEvaluationBody({ userId: 'u', stage: 5 }), 'stage: expected a string, got number');
  bad(t, () => parseEvaluationBody({ userId: '', stage: 'p' }), 'userId: must not be empty');
  bad(t, () => parseEvaluationBody({ userId: 42, stage: 'p' }), 'userId: expected a string, got number');
  bad(t, () => parseEvaluationBody({ userId: 'u'.repeat(1025), stage: 'p' }), 'userId: must be at most 1024 characters');
  bad(t, () => parseEvaluationBody({ userId: 'u', stage: 'p', context: [1] }), 'context: expected an object or null, got array');
  bad(t, () => parseEvaluationBody({ userId: 'u', stage: 'p', context: 'x' }), 'context: expected an object or null, got string');
  bad(t, () => parseEvaluationBody({ userId: 'u', stage: 'p', clientId: 3 }), 'clientId: expected a string or null');
  bad(t, () => parseEvaluationBody({ userId: 'u', stage: 'p', clientId: '' }), 'clientId: must not be empty');
  t.equal(bad(t, () => parseEvaluationBody({ userId: 'u', stage: 'p', flag: 'x' })), "unknown field 'flag'");
  bad(t, () => parseEvaluationBody([]), 'evaluation request: expected a JSON object, got array');
  bad(t, () => parseEvaluationBody(null), 'evaluation request: expected a JSON object, got null');
  bad(t, () => parseEvaluationBody('{}'), 'evaluation request: expected a JSON object, got string');
});

t.test('parseCreateKey', async (t) => {
  t.same(parseCreateKey({ name: '  ci key ', permissions: ['CanEvaluate'], application: 'web' }), {
    name: 'ci key',
    permissions: ['CanEvaluate'],
    application: 'web',
    environment: null,
  });
  t.same(parseCreateKey({ name: 'k', permissions: ['Admin', 'CanRead', 'CanWrite'], application: null, environment: 'production' }), {
    name: 'k',
    permissions: ['Admin', 'CanRead', 'CanWrite'],
    application: null,
    environment: 'production',
  });
  t.equal(parseCreateKey({ name: 'n'.repeat(200), permissions: ['CanRead'] }).name.length, 200);
  bad(t, () => parseCreateKey({ name: 'n'.repeat(201), permissions: ['CanRead'] }), 'name: must be at most 200 characters');
  bad(t, () => parseCreateKey({ name: '   ', permissions: ['CanRead'] }), 'name: must not be empty');
  bad(t, () => parseCreateKey({ permissions: ['CanRead'] }), 'name is required');
  bad(t, () => parseCreateKey({ name: 'k', permissions: [] }), 'permissions: must not be empty');
  bad(t, () => parseCreateKey({ name: 'k' }), 'permissions is required');
  bad(t, () => parseCreateKey({ name: 'k', permissions: ['CanRead', 'Root'] }), "permissions[1]: expected one of CanEvaluate, CanRead, CanWrite, Admin, CanApprove, got 'Root'");
  bad(t, () => parseCreateKey({ name: 'k', permissions: ['CanRead', 'CanRead'] }), "permissions[1]: duplicate permission 'CanRead'");
  bad(t, () => parseCreateKey({ name: 'k', permissions: ['CanRead'], application: 'a b' }), 'application:');
  bad(t, () => parseCreateKey({ name: 'k', permissions: ['CanRead'], environment: 5 }), 'environment: expected a string');
  bad(t, () => parseCreateKey({ name: 'k', permissions: ['CanRead'], scope: 'x' }), "unknown field 'scope'");
});

t.test('parseCreateOrganization', async (t) => {
  t.same(parseCreateOrganization({ name: 'acme', environments: ['dev', 'prod'], applications: ['web'] }), {
    name: 'acme',
    environments: ['dev', 'prod'],
    applications: ['web'],
    subscriptionActive: true,
  });
  t.equal(parseCreateOrganization({ name: 'acme', environments: ['dev'], applications: ['web'], subscriptionActive: false }).subscriptionActive, false);
  bad(t, () => parseCreateOrganization({ name: 'ac me', environments: ['dev'], applications: ['web'] }), 'name:');
  bad(t, () => parseCreateOrganization({ environments: ['dev'], applications: ['web'] }), 'name is required');
  bad(t, () => parseCreateOrganization({ name: 'acme', environments: [], applications: ['web'] }), 'environments: must not be empty');
  bad(t, () => parseCreateOrganization({ name: 'acme', environments: ['dev'], applications: [] }), 'applications: must not be empty');
  bad(t, () => parseCreateOrganization({ name: 'acme', applications: ['web'] }), 'environments is required');
  bad(t, () => parseCreateOrganization({ name: 'acme', environments: ['dev', 'DEV'], applications: ['web'] }), 'environments[1]: duplicate');
  bad(t, () => parseCreateOrganization({ name: 'acme', environments: ['dev'], applications: ['Web', 'web'] }), 'applications[1]: duplicate');
  bad(t, () => parseCreateOrganization({ name: 'acme', environments: ['d v'], applications: ['web'] }), 'environments[0]:');
  bad(t, () => parseCreateOrganization({ name: 'acme', environments: ['dev'], applications: ['web'], subscriptionActive: 'yes' }), 'subscriptionActive: expected a boolean');
  bad(t, () => parseCreateOrganization({ name: 'acme', environments: ['dev'], applications: ['web'], plan: 'gold' }), "unknown field 'plan'");
});

t.test('parsePatchOrganization', async (t) => {
  t.same(parsePatchOrganization({ subscriptionActive: false }), { subscriptionActive: false });
  t.same(parsePatchOrganization({ subscriptionActive: true }), { subscriptionActive: true });
  bad(t, () => parsePatchOrganization({}), 'subscriptionActive is required');
  bad(t, () => parsePatchOrganization({ subscriptionActive: 1 }), 'subscriptionActive: expected a boolean');
  bad(t, () => parsePatchOrganization({ subscriptionActive: true, name: 'x' }), "unknown field 'name'");
});

t.test('parseKillSwitchRules', async (t) => {
  t.same(parseKillSwitchRules([]), []);
  t.same(parseKillSwitchRules([{ flag: 'f1' }, { application: 'web', environment: null }, {}]), [
    { flag: 'f1', application: null, environment: null },
    { flag: null, application: 'web', environment: null },
    { flag: null, application: null, environment: null },
  ]);
  t.same(parseKillSwitchRules([{ flag: 'f1' }, { flag: 'f1', application: null }]), [{ flag: 'f1', application: null, environment: null }]);
  bad(t, () => parseKillSwitchRules([{ flag: 'f1' }, { flag: 'bad name' }]), 'rules[1].flag:');
  bad(t, () => parseKillSwitchRules([{ application: 'a b' }]), 'rules[0].application:');
  bad(t, () => parseKillSwitchRules([{ environment: 7 }]), 'rules[0].environment: expected a string');
  bad(t, () => parseKillSwitchRules([{ flag: 'f', stage: 'p' }]), "rules[0]: unknown field 'stage'");
  bad(t, () => parseKillSwitchRules({ flag: 'f' }), 'rules: expected an array, got object');
});
