/** Key values (docs/api.md, "Keys"): 64 lowercase hex from a CSPRNG, stored as SHA-256, compared in constant time. */
import { createHash } from 'node:crypto';
import t from 'tap';
import { digestsEqual, generateKeyValue, hashKey, KeyHashMemo, secretMatches } from '../../../src/auth/key-material.js';
import { KEY_RE as KEY_PATTERN } from '../../../src/domain/input-formats.js';

t.test('generated values are 64 lowercase hex and distinct', async (t) => {
  const values = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const v = generateKeyValue();
    if (!/^[0-9a-f]{64}$/.test(v)) t.fail(`bad value ${v}`);
    values.add(v);
  }
  t.equal(values.size, 200);
  const chars = new Set([...values].join(''));
  t.equal(chars.size, 16, 'every hex digit occurs (not a fixed pattern)');
});

t.test('KEY_PATTERN accepts exactly 64 lowercase hex characters', async (t) => {
  t.ok(KEY_PATTERN.test('a'.repeat(64)));
  t.ok(KEY_PATTERN.test('0123456789abcdef'.repeat(4)));
  for (const bad of ['A'.repeat(64), 'a'.repeat(63), 'a'.repeat(65), 'g'.repeat(64), ` ${'a'.repeat(63)}`, `${'a'.repeat(64)}\n`, '']) {
    t.notOk(KEY_PATTERN.test(bad), JSON.stringify(bad));
  }
});

t.test('hashKey is SHA-256 hex', async (t) => {
  t.equal(hashKey('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', 'FIPS 180-2 test vector');
  const v = generateKeyValue();
  t.equal(hashKey(v), createHash('sha256').update(v).digest('hex'));
  t.not(hashKey(v), hashKey(v.toUpperCase()));
});

t.test('constant-time comparisons', async (t) => {
  t.ok(digestsEqual(hashKey('a'), hashKey('a')));
  t.notOk(digestsEqual(hashKey('a'), hashKey('b')));
  t.notOk(digestsEqual('abc', 'abcd'), 'different lengths are unequal, without throwing');
  t.ok(secretMatches('operator-token-123', 'operator-token-123'));
  t.notOk(secretMatches('operator-token-12', 'operator-token-123'), 'a prefix does not match');
  t.notOk(secretMatches('', 'operator-token-123'));
  t.notOk(secretMatches('OPERATOR-TOKEN-123', 'operator-token-123'), 'case matters');
});

t.test('KeyHashMemo answers what it was told, and is bounded, oldest first', async (t) => {
  const m = new KeyHashMemo(3);
  const values = ['aa', 'bb', 'cc', 'dd'].map((x) => x.repeat(32));
  t.equal(m.get(values[0]), undefined, 'nothing until remembered');
  for (const v of values) m.remember(v, hashKey(v));
  t.equal(m.size, 3, 'bounded');
  t.equal(m.get(values[0]), undefined, 'the oldest went first');
  for (const v of values.slice(1)) t.equal(m.get(v), hashKey(v));
});
