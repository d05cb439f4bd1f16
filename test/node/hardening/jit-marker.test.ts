/**
 * The graphql-jit marker check is linear (docs/limits.md, "GraphQL documents"). `hasJitMarker` answers exactly what the
 * old regular expression answers (property-tested against it), and the work it does, counted in
 * character inspections, stays within a constant times the input on the inputs that made the
 * regular expression quadratic. Over HTTP, a marker is still refused and a 100 KiB literal of
 * `__MAGIC_` repeats is answered normally.
 */
import fc from 'fast-check';
import t from 'tap';
import { hasJitMarker, type ScanStats } from '../../../src/graphql/jit-marker.js';
import { createFlag, createKey, startTestNode, upsertConfig } from '../../helpers/node.js';
import { expectRequestError, gql } from '../../helpers/graphql.js';

const REGEX = /__MAGIC_[A-Z_]*__[0-9a-f]{8}_/;

t.test('same answer as the regular expression', async (t) => {
  const piece = fc.constantFrom('__MAGIC_', '__', '_', 'DATE', 'NAN', 'A', 'z', '0123abcd', 'deadbeef', '9', 'f', ' ', 'é', '___');
  const str = fc.array(piece, { maxLength: 30 }).map((a) => a.join(''));
  fc.assert(fc.property(fc.oneof(str, fc.string()), (s) => hasJitMarker(s) === REGEX.test(s)), { numRuns: 5_000 });
  for (const s of ['__MAGIC_DATE__0123abcd_', '__MAGIC___0123abcd_', 'x__MAGIC_NAN__ffffffff_y', '__MAGIC_a__0123abcd_', '__MAGIC_DATE__0123abc_', '__MAGIC_DATE__0123abcd']) {
    t.equal(hasJitMarker(s), REGEX.test(s), JSON.stringify(s));
  }
  t.ok(hasJitMarker('__MAGIC_DATE__0123abcd_'), 'a real marker is found');
});

t.test('the work is linear in the input (counted, not timed)', async (t) => {
  const size = 100 * 1024;
  const adversarial = [
    '__MAGIC_'.repeat(size / 8),
    '__MAGIC_'.repeat(size / 8 - 2) + '__0123abc',
    ('__MAGIC_' + '__0123abcd').repeat(size / 18),
    '__MAGIC_' + '_'.repeat(size),
    '__MAGIC_' + 'A'.repeat(size) + '__',
    ('__MAGIC_' + '__deadbee!').repeat(size / 18),
  ];
  for (const s of adversarial) {
    const stats: ScanStats = { steps: 0 };
    t.equal(hasJitMarker(s, stats), REGEX.test(s.slice(0, 2000)) && hasJitMarker(s), 'answer');
    t.ok(stats.steps <= 3 * s.length, `${stats.steps} steps for ${s.length} characters (at most 3 per character)`);
  }
});

t.test('over HTTP: a marker is refused, a long run of __MAGIC_ is answered', async (t) => {
  const n = await startTestNode(t);
  await createFlag(n, 'f');
  await upsertConfig(n, 'f', {});
  const key = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  const marker = await gql(n, key, '{ evaluate(key: "f", userId: "__MAGIC_DATE__0123abcd_", stage: "production") { key } }');
  expectRequestError(t, marker, /reserved/, 'marker in a string');
  const long = '__MAGIC_'.repeat(Math.floor((100 * 1024 - 200) / 8));
  const r = await gql(n, key, `{ evaluate(key: "f", userId: "u", stage: "production", context: {s: "${long}"}) { key } }`);
  t.equal(r.status, 200);
  t.same(r.body.errors, undefined, 'no marker: no error');
  t.equal(r.body.data?.evaluate?.key, 'off', 'evaluated');
});
