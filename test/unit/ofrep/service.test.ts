/**
 * The pure parts of OFREP (no I/O): the reason mapping table, the hand-written serialiser, request
 * parsing, If-None-Match matching and the event-stream token.
 */
import t from 'tap';
import { REASON_CODES, type Evaluation } from '../../../src/domain/types.js';
import { ofrepJson, REASON_MAP } from '../../../src/engine/ofrep-answer.js';
import { OfrepError } from '../../../src/ofrep/errors.js';
import { etagMatches } from '../../../src/ofrep/etag.js';
import { parseOfrepRequest } from '../../../src/ofrep/request.js';
import { issueStreamToken, readStreamToken, TOKEN_GRID_S, TOKEN_MIN_LIFETIME_S, tokenExpiry, verifyStreamToken } from '../../../src/ofrep/stream-token.js';

t.test('reason mapping covers every Vexil reason code', async (t) => {
  t.same(Object.keys(REASON_MAP).sort(), [...REASON_CODES].sort());
  t.same(
    Object.fromEntries(REASON_CODES.map((c) => [c, REASON_MAP[c]])),
    {
      rule_matched: 'TARGETING_MATCH', default: 'STATIC', killswitch: 'DISABLED', archived: 'DISABLED',
      not_yet_active: 'DISABLED', expired: 'DISABLED', project_or_env_mismatch: 'UNKNOWN',
      disabled_dependency: 'DISABLED', config_disabled: 'DISABLED', config_missing: 'UNKNOWN',
      rollout_excluded: 'SPLIT', enrollment_closed: 'SPLIT', no_variants: 'UNKNOWN',
    },
  );
});

t.test('ofrepJson is valid JSON with the evaluationSuccess fields', async (t) => {
  const ev = (key: string | null, variant: unknown): Evaluation => ({ key, variant, reason: { code: key === null ? 'config_missing' : 'default', message: 'm' } });
  const weird = 'a"b\\c\u2028';
  t.same(JSON.parse(ofrepJson(weird, ev('v"1', { x: [1, 'é'], y: null }), 'STATIC')), {
    key: weird, value: { x: [1, 'é'], y: null }, variant: 'v"1', reason: 'STATIC', metadata: { reasonCode: 'default' },
  });
  t.same(JSON.parse(ofrepJson('f', ev('off', false), 'STATIC')), { key: 'f', value: false, variant: 'off', reason: 'STATIC', metadata: { reasonCode: 'default' } });
  const none = JSON.parse(ofrepJson('f', ev(null, null), 'UNKNOWN'));
  t.same(none, { key: 'f', reason: 'UNKNOWN', metadata: { reasonCode: 'config_missing' } }, 'no variant: no value, no variant');
  t.notOk('value' in none);
});

t.test('parseOfrepRequest', async (t) => {
  const code = (fn: () => unknown) => {
    try {
      fn();
      return 'ok';
    } catch (e) {
      return (e as OfrepError).errorCode;
    }
  };
  t.same(parseOfrepRequest({ context: { targetingKey: 'u', stage: 's', clientId: 'c', a: { b: 1 } } }, 'f'), { userId: 'u', stage: 's', clientId: 'c', context: { a: { b: 1 } } });
  t.same(parseOfrepRequest({ context: { targetingKey: 'u' } }, null), { userId: 'u', stage: null, clientId: null, context: null }, 'only reserved keys: context null');
  t.equal(code(() => parseOfrepRequest({}, 'f')), 'TARGETING_KEY_MISSING');
  t.equal(code(() => parseOfrepRequest({ context: { targetingKey: '' } }, 'f')), 'TARGETING_KEY_MISSING');
  t.equal(code(() => parseOfrepRequest({ context: null }, 'f')), 'TARGETING_KEY_MISSING');
  t.equal(code(() => parseOfrepRequest({ context: 'x' }, 'f')), 'INVALID_CONTEXT');
  t.equal(code(() => parseOfrepRequest({ context: [] }, 'f')), 'INVALID_CONTEXT');
  t.equal(code(() => parseOfrepRequest({ context: { targetingKey: 1 } }, 'f')), 'INVALID_CONTEXT');
  t.equal(code(() => parseOfrepRequest({ context: { targetingKey: 'x'.repeat(1025) } }, 'f')), 'INVALID_CONTEXT');
  t.equal(code(() => parseOfrepRequest({ context: { targetingKey: 'u', stage: '' } }, 'f')), 'INVALID_CONTEXT');
  t.equal(code(() => parseOfrepRequest({ context: { targetingKey: 'u', clientId: 5 } }, 'f')), 'INVALID_CONTEXT');
  const e = (() => {
    try {
      parseOfrepRequest({}, 'my-flag');
    } catch (err) {
      return err as OfrepError;
    }
  })();
  t.equal(e?.flagKey, 'my-flag');
  t.equal(e?.status, 400);
});

t.test('If-None-Match', async (t) => {
  const tag = '"abc"';
  t.ok(etagMatches('"abc"', tag));
  t.ok(etagMatches('W/"abc"', tag), 'weak comparison');
  t.ok(etagMatches('"x", "abc"', tag), 'a list');
  t.ok(etagMatches('*', tag));
  t.notOk(etagMatches('', tag));
  t.notOk(etagMatches('"abd"', tag));
  t.notOk(etagMatches('abc', tag), 'unquoted is another tag');
});

t.test('stream token: signed with the stored hash, expiring, never the key value', async (t) => {
  const hash = 'a'.repeat(64);
  const now = Date.UTC(2026, 0, 1, 12, 0, 7);
  const tok = issueStreamToken('key-1', hash, now);
  t.notMatch(tok, hash, 'the hash is not in the token');
  t.same(readStreamToken(tok), { keyId: 'key-1', expiry: tokenExpiry(now) });
  const life = tokenExpiry(now) - now / 1000;
  t.ok(life >= TOKEN_MIN_LIFETIME_S && life <= TOKEN_MIN_LIFETIME_S + TOKEN_GRID_S, `lifetime ${life} s`);
  t.equal(issueStreamToken('key-1', hash, now + 1000), tok, 'stable within a grid step (the provider keeps its connection)');
  t.ok(verifyStreamToken(tok, hash, now));
  t.notOk(verifyStreamToken(tok, 'b'.repeat(64), now), 'a rotated key (new hash) invalidates it');
  t.notOk(verifyStreamToken(tok, hash, tokenExpiry(now) * 1000), 'expired');
  t.notOk(verifyStreamToken(tok.replace('key-1', 'key-2'), hash, now), 'another key id');
  t.notOk(verifyStreamToken(tok.slice(0, -1) + (tok.endsWith('A') ? 'B' : 'A'), hash, now), 'a changed signature');
  t.equal(readStreamToken('nonsense'), null);
});
