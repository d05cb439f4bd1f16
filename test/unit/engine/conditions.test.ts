import t from 'tap';
import { OPERATORS, FIELD_PATH_RE, isValidFieldPath, isOperator } from '../../../src/domain/condition-syntax.js';
import { jsonEqual, compileCondition, conditionMatches } from '../../../src/engine/index.js';

const m = (field: string, operator: string, value: unknown, context: Record<string, unknown> | null, userId = 'u-1') =>
  conditionMatches(compileCondition(field, operator, value), userId, context);

t.test('OPERATORS lists exactly the documented operators', async (t) => {
  t.same([...OPERATORS].sort(), ['!=', '<', '<=', '==', '>', '>=', 'contains', 'ends_with', 'in', 'not_in', 'starts_with'].sort());
  t.ok(isOperator('=='));
  t.notOk(isOperator('==='));
  t.notOk(isOperator('matches'));
});

t.test('field paths: letters, digits, underscores and dots only', async (t) => {
  for (const ok of ['plan', 'user_id', 'a.b.c', 'A1.b_2', '0', 'userId', 'x.0']) t.ok(isValidFieldPath(ok), `${ok} valid`);
  for (const bad of ['', 'user-id', 'user id', 'a..b', '.a', 'a.', 'a. b', 'a.b-c', 'é', 'a/b', 'a[0]', ' a', 'a\n']) {
    t.notOk(isValidFieldPath(bad), `${JSON.stringify(bad)} rejected`);
  }
  t.ok(FIELD_PATH_RE.test('a.b'));
  t.notOk(FIELD_PATH_RE.test('a-b'));
  // A stored invalid path compiles to a condition that never matches.
  t.notOk(m('plan-type', '==', 'pro', { 'plan-type': 'pro' }));
  t.notOk(m('plan-type', '!=', 'x', { 'plan-type': 'pro' }));
});

t.test('jsonEqual is strict JSON equality', async (t) => {
  t.notOk(jsonEqual(1, '1'), '1 vs "1"');
  t.notOk(jsonEqual(true, 'true'));
  t.notOk(jsonEqual(0, false));
  t.notOk(jsonEqual(null, 0));
  t.notOk(jsonEqual(null, {}));
  t.notOk(jsonEqual([], {}));
  t.ok(jsonEqual(null, null));
  t.ok(jsonEqual(1, 1.0));
  t.ok(jsonEqual('a', 'a'));
  t.ok(jsonEqual({ a: 1, b: [1, { c: 'x' }] }, { b: [1, { c: 'x' }], a: 1 }), 'key order irrelevant, nested');
  t.notOk(jsonEqual({ a: 1, b: [1, { c: 'x' }] }, { a: 1, b: [1, { c: 'y' }] }), 'deep difference');
  t.notOk(jsonEqual({ a: 1 }, { a: 1, b: 2 }), 'extra key');
  t.notOk(jsonEqual({ a: 1, b: 2 }, { a: 1 }), 'missing key');
  t.notOk(jsonEqual({ a: 1, b: 2 }, { a: 1, c: 2 }), 'same size, different key');
  t.notOk(jsonEqual([1, 2], [2, 1]), 'array order matters');
  t.notOk(jsonEqual([1], [1, 1]));
  t.notOk(jsonEqual({ a: '1' }, { a: 1 }), 'nested 1 vs "1"');
});

t.test('== and != with strict equality', async (t) => {
  t.ok(m('plan', '==', 'pro', { plan: 'pro' }));
  t.notOk(m('plan', '==', 'pro', { plan: 'Pro' }), 'case-sensitive');
  t.notOk(m('age', '==', 1, { age: '1' }), '"1" is not 1');
  t.notOk(m('age', '==', '1', { age: 1 }), '1 is not "1"');
  t.ok(m('meta', '==', { x: 1, y: [true, null] }, { meta: { y: [true, null], x: 1 } }), 'object, key order irrelevant');
  t.ok(m('opt', '==', null, { opt: null }), 'present null equals null');
  t.ok(m('age', '!=', '1', { age: 1 }));
  t.notOk(m('age', '!=', 1, { age: 1 }));
  t.notOk(m('missing', '!=', 'x', { age: 1 }), '!= does not match a missing field');
  t.notOk(m('missing', '==', null, { age: 1 }), 'missing is not null');
});

t.test('in / not_in', async (t) => {
  t.ok(m('country', 'in', ['DE', 'FR'], { country: 'FR' }));
  t.notOk(m('country', 'in', ['DE', 'FR'], { country: 'US' }));
  t.notOk(m('n', 'in', ['1', '2'], { n: 1 }), 'strict: 1 not in ["1"]');
  t.ok(m('obj', 'in', [{ a: 1, b: 2 }], { obj: { b: 2, a: 1 } }), 'deep equality inside in');
  t.notOk(m('country', 'in', 'FR', { country: 'FR' }), 'value must be an array');
  t.ok(m('country', 'not_in', ['DE', 'FR'], { country: 'US' }));
  t.notOk(m('country', 'not_in', ['DE', 'FR'], { country: 'DE' }));
  t.notOk(m('country', 'not_in', ['DE'], {}), 'not_in does not match a missing field');
  t.notOk(m('country', 'not_in', 'DE', { country: 'US' }), 'not_in value must be an array');
  // Large primitive lists use a Set; the semantics must not change.
  const many = Array.from({ length: 50 }, (_, i) => `c${i}`).concat([7 as unknown as string]);
  t.ok(m('c', 'in', many, { c: 'c42' }));
  t.ok(m('c', 'in', many, { c: 7 }));
  t.notOk(m('c', 'in', many, { c: '7' }), 'Set path is strict too');
  t.notOk(m('c', 'in', many, { c: ['c1'] }));
  t.ok(m('c', 'not_in', many, { c: 'zz' }));
  t.notOk(m('c', 'not_in', many, { c: 'c3' }));
  t.ok(m('c', 'not_in', many, { c: { a: 1 } }), 'object is in no primitive list');
});

t.test('contains / starts_with / ends_with', async (t) => {
  t.ok(m('email', 'contains', '@acme', { email: 'jo@acme.com' }));
  t.notOk(m('email', 'contains', '@other', { email: 'jo@acme.com' }));
  t.ok(m('tags', 'contains', 'beta', { tags: ['alpha', 'beta'] }), 'array includes');
  t.ok(m('tags', 'contains', { k: 1 }, { tags: [{ k: 1 }] }), 'array includes, deep');
  t.notOk(m('tags', 'contains', 1, { tags: ['1'] }), 'array includes, strict');
  t.notOk(m('n', 'contains', 1, { n: 123 }), 'numbers do not contain');
  t.notOk(m('email', 'contains', 1, { email: 'a1' }), 'string contains needs a string value');
  t.ok(m('email', 'starts_with', 'jo@', { email: 'jo@acme.com' }));
  t.notOk(m('email', 'starts_with', 'acme', { email: 'jo@acme.com' }));
  t.ok(m('email', 'ends_with', '.com', { email: 'jo@acme.com' }));
  t.notOk(m('email', 'ends_with', '.org', { email: 'jo@acme.com' }));
  t.notOk(m('n', 'starts_with', '1', { n: 123 }), 'starts_with is strings only');
  t.notOk(m('n', 'ends_with', '3', { n: 123 }), 'ends_with is strings only');
});

t.test('< <= > >= compare numbers only', async (t) => {
  const ctx = { age: 30 };
  t.ok(m('age', '<', 31, ctx));
  t.notOk(m('age', '<', 30, ctx));
  t.ok(m('age', '<=', 30, ctx));
  t.notOk(m('age', '<=', 29, ctx));
  t.ok(m('age', '>', 29, ctx));
  t.notOk(m('age', '>', 30, ctx));
  t.ok(m('age', '>=', 30, ctx));
  t.notOk(m('age', '>=', 31, ctx));
  t.notOk(m('age', '<', 31, { age: '30' }), 'string never compares');
  t.notOk(m('age', '>', '29', ctx), 'string value never compares');
  t.notOk(m('name', '>', 'a', { name: 'b' }), 'strings never compare');
  t.notOk(m('age', '<', 1, { age: null }), 'null never compares');
});

t.test('lookup: dotted paths, userId, missing fields', async (t) => {
  t.ok(m('user.address.city', '==', 'Berlin', { user: { address: { city: 'Berlin' } } }), 'nested path');
  t.notOk(m('user.address.city', '==', 'Berlin', { user: { address: 'Berlin' } }), 'path through a string');
  t.notOk(m('user.address.city', '==', 'Berlin', { user: null }), 'path through null');
  t.ok(m('items.1', '==', 'b', { items: ['a', 'b'] }), 'numeric segment into an array');
  t.notOk(m('items.length', '==', 2, { items: ['a', 'b'] }), 'array length is not a field');
  t.ok(m('userId', '==', 'u-1', null), 'userId is present with a null context');
  t.ok(m('userId', '==', 'u-1', { userId: 'spoofed' }), "the request's userId wins");
  t.notOk(m('userId', '==', 'spoofed', { userId: 'spoofed' }), 'context.userId is ignored');
  t.notOk(m('plan', '==', 'pro', null), 'null context: field missing');
  t.notOk(m('constructor', '!=', 'x', {}), 'inherited properties are not fields');
  t.notOk(m('toString', 'not_in', ['x'], {}), 'inherited properties are not fields');
  t.notOk(m('a.hasOwnProperty', '!=', 1, { a: {} }), 'inherited properties are not fields (nested)');
  t.notOk(m('plan', 'no_such_op', 'pro', { plan: 'pro' }), 'unknown operator never matches');
  for (const op of OPERATORS) t.notOk(m('missing', op, op === 'in' || op === 'not_in' ? [1] : 1, { other: 1 }), `missing field: ${op} does not match`);
});
