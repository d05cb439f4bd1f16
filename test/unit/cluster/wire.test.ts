/**
 * The bus wire format (src/cluster/wire.ts): decoding never throws, whatever the bytes; signed
 * messages are accepted once, within the time window, with the right secret only. The same rules
 * over real NATS and real nodes: bus-trust.test.ts and bus-signing.test.ts.
 */
import fc from 'fast-check';
import t from 'tap';
import { BusCodec, MAX_MESSAGE_BYTES, WINDOW_MS } from '../../../src/cluster/wire.js';

const SECRET = 'a-cluster-secret-of-at-least-32-chars!!';
const change = { kind: 'change', change: { orgId: 'o', version: 7, touches: { flag: 'f' } } } as const;

t.test('any bytes decode to a message or a reason, never an exception', async (t) => {
  const open = new BusCodec('me', null);
  const signed = new BusCodec('me', SECRET);
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 512 }), fc.option(fc.string()), (bytes, sig) => {
      for (const c of [open, signed]) {
        const d = c.decode(bytes, sig ?? undefined);
        if (!d.ok && typeof d.reason !== 'string') return false;
      }
      return true;
    }),
  );
  fc.assert(
    fc.property(fc.jsonValue(), (v) => {
      const d = open.decode(new TextEncoder().encode(JSON.stringify({ node: 'n', ts: 1, nonce: '0'.repeat(32), event: v })), undefined);
      return d.ok === false || ['change', 'key', 'heartbeat'].includes(d.message.event.kind);
    }),
  );
  t.equal(open.decode(new Uint8Array(MAX_MESSAGE_BYTES + 1), undefined).ok, false);
  t.same(open.decode(new Uint8Array(MAX_MESSAGE_BYTES + 1), undefined), { ok: false, reason: 'too_large' });
});

t.test('a message round-trips; heartbeats must name their sender', async (t) => {
  const a = new BusCodec('node-a', null);
  const b = new BusCodec('node-b', null);
  const { data, signature } = a.encode(change);
  t.equal(signature, null, 'no secret: no signature');
  t.same(b.decode(data, undefined), { ok: true, message: { node: 'node-a', event: change } });
  const lying = new TextEncoder().encode(JSON.stringify({ node: 'x', ts: 1, nonce: 'ab'.repeat(16), event: { kind: 'heartbeat', node: 'y' } }));
  t.same(b.decode(lying, undefined), { ok: false, reason: 'malformed' });
});

t.test('with a secret: signature, window and nonce', async (t) => {
  let now = 1_000_000;
  const a = new BusCodec('node-a', SECRET, () => now);
  const b = new BusCodec('node-b', SECRET, () => now);
  const other = new BusCodec('node-c', 'another-secret-that-is-long-enough!!!', () => now);
  const m = a.encode(change);
  t.match(m.signature, /^[0-9a-f]{64}$/);
  t.same(b.decode(m.data, undefined), { ok: false, reason: 'unsigned' });
  t.same(other.decode(m.data, m.signature!), { ok: false, reason: 'bad_signature' });
  const tampered = Uint8Array.from(m.data);
  tampered[tampered.length - 3] ^= 1;
  t.same(b.decode(tampered, m.signature!), { ok: false, reason: 'bad_signature' }, 'one bit changed');
  t.equal(b.decode(m.data, m.signature!).ok, true, 'accepted once');
  t.same(b.decode(m.data, m.signature!), { ok: false, reason: 'replayed' }, 'not twice');
  const late = a.encode(change);
  now += WINDOW_MS + 1;
  t.same(b.decode(late.data, late.signature!), { ok: false, reason: 'expired' }, 'not after the window');
  t.same(b.decode(m.data, m.signature!), { ok: false, reason: 'expired' }, 'a replay after the window is expired too');
});
