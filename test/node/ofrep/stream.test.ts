/**
 * The OFREP event stream (docs/ofrep.md, "The event stream") on one node: `refetchEvaluation` within 1 s of a change to a
 * flag of the key's application (and of organization settings such as the kill switch), nothing
 * for other applications' flags, token checks, and streams that end when their key is disabled,
 * rotated or deleted, after which reconnecting gets 401.
 */
import t from 'tap';
import type { TestNode } from '../../helpers/node.js';
import { createOrg, evalKey, must, postConfig, postFlag, setKillSwitch, startNode } from '../../helpers/flags.js';
import { openSse, within } from '../../helpers/sse.js';

const REFETCH = '{"type":"refetchEvaluation"}';
const ctx = { targetingKey: 'u1', stage: 'production' };

async function streamUrl(n: TestNode, key: string): Promise<string> {
  const r = await n.req('POST', '/ofrep/v1/evaluate/flags', { key, body: { context: ctx } });
  if (r.status !== 200) throw new Error(`bulk failed: ${r.status} ${r.text}`);
  return r.body.eventStreams[0].url as string;
}

t.test('OFREP event stream', async (t) => {
  const n = await startNode(t);
  const org = await createOrg(n, ['production'], ['web', 'other']);
  const admin = org.adminKey;
  must(t, await postFlag(n, admin, 'w1'), 201, 'w1');
  must(t, await postConfig(n, admin, 'w1'), 200, 'w1 config');
  must(t, await postFlag(n, admin, 'o1', { project: 'other' }), 201, 'o1');
  must(t, await postConfig(n, admin, 'o1'), 200, 'o1 config');

  t.test('refetchEvaluation within 1 s of a change to the key application', async (t) => {
    const ek = await evalKey(n, admin, 'web');
    const s = await openSse(await streamUrl(n, ek));
    t.teardown(() => s.close());
    t.equal(s.status, 200);
    t.match(s.headers.get('content-type'), /^text\/event-stream/);
    for (const [what, change] of [
      ['a configuration change', () => postConfig(n, admin, 'w1', { defaultVariantKey: 'on' })],
      ['a new flag', () => postFlag(n, admin, 'w2')],
      ['a kill switch change (organization settings)', () => setKillSwitch(n, admin, [{ flag: 'w1' }])],
    ] as const) {
      const started = Date.now();
      await change();
      const ev = await s.next(1000);
      t.equal(ev, REFETCH, `${what}: refetchEvaluation after ${Date.now() - started} ms`);
    }
    await setKillSwitch(n, admin, []);
    t.equal(await s.next(1000), REFETCH, 'kill switch cleared');
    // Another application's flag: no event.
    must(t, await postConfig(n, admin, 'o1', { defaultVariantKey: 'on' }), 200, 'change o1');
    t.equal(await s.next(400), null, 'a change to another application: no event');
    // Changes to the key application still arrive after one elsewhere.
    must(t, await postConfig(n, admin, 'w1', { defaultVariantKey: 'off' }), 200, 'change w1');
    t.equal(await s.next(1000), REFETCH, 'events resume for the key application');
    t.notOk(s.isEnded, 'the stream stays open');
  });

  t.test('segment changes: refetchEvaluation for its application and for organization-wide ones (docs/api.md#segments)', async (t) => {
    const ek = await evalKey(n, admin, 'web');
    const s = await openSse(await streamUrl(n, ek));
    t.teardown(() => s.close());
    const segment = (name: string, application: string | null) => n.req('POST', '/api/segments', { key: admin, body: { name, application } });
    must(t, await segment('seg-web', 'web'), 201, 'a web segment');
    t.equal(await s.next(1000), REFETCH, 'a segment of the key application: refetchEvaluation');
    must(t, await segment('seg-all', null), 201, 'an organization-wide segment');
    t.equal(await s.next(1000), REFETCH, 'an organization-wide segment (any application may use it): refetchEvaluation');
    must(t, await segment('seg-other', 'other'), 201, 'another application\'s segment');
    t.equal(await s.next(400), null, "another application's segment: no event");
    must(t, await n.req('PUT', '/api/segments/seg-web', { key: admin, body: { description: 'changed' } }), 200, 'update');
    t.equal(await s.next(1000), REFETCH, 'an update: refetchEvaluation');
    must(t, await n.req('DELETE', '/api/segments/seg-web', { key: admin }), 204, 'delete');
    t.equal(await s.next(1000), REFETCH, "a deletion (the segment's application no longer known): refetchEvaluation");
  });

  t.test('tokens: missing, malformed, tampered, or for another key: 401', async (t) => {
    const ek = await evalKey(n, admin, 'web');
    const url = new URL(await streamUrl(n, ek));
    const token = url.searchParams.get('token')!;
    const refused = async (what: string, u: string) => {
      const s = await openSse(u);
      t.equal(s.status, 401, `${what}: 401`);
      t.same(Object.keys(JSON.parse(s.text)), ['errorDetails'], `${what}: {errorDetails}`);
    };
    await refused('no token', `${url.origin}${url.pathname}`);
    await refused('malformed', `${url.origin}${url.pathname}?token=abc`);
    const sig = token.slice(token.lastIndexOf('.') + 1);
    await refused('tampered signature', `${url.origin}${url.pathname}?token=${token.slice(0, -sig.length)}${sig[0] === 'A' ? 'B' : 'A'}${sig.slice(1)}`);
    const [id, exp] = token.split('.');
    await refused('later expiry', `${url.origin}${url.pathname}?token=${id}.${Number(exp) + 300}.${sig}`);
    const other = await evalKey(n, admin, 'web');
    const otherId = new URL(await streamUrl(n, other)).searchParams.get('token')!.split('.')[0];
    await refused('another key id', `${url.origin}${url.pathname}?token=${otherId}.${exp}.${sig}`);
    const ok = await openSse(url.toString());
    t.equal(ok.status, 200, 'the real token opens');
    ok.close();
  });

  t.test('disable, rotate, delete: the stream ends; reconnecting gets 401', async (t) => {
    const keyIds = async () => ((await n.req('GET', '/api/keys', { key: admin })).body as { id: string }[]).map((k) => k.id);
    for (const action of ['disable', 'rotate', 'delete'] as const) {
      const before = new Set(await keyIds());
      const ek = await evalKey(n, admin, 'web');
      const id = (await keyIds()).find((k) => !before.has(k))!;
      const url = await streamUrl(n, ek);
      const s = await openSse(url);
      t.equal(s.status, 200, `${action}: stream open`);
      const r =
        action === 'delete'
          ? await n.req('DELETE', `/api/keys/${id}`, { key: admin })
          : await n.req('POST', `/api/keys/${id}/${action}`, { key: admin });
      t.ok(r.status === 200 || r.status === 204, `${action}: ${r.status}`);
      t.ok(await within(s.ended, 1000), `${action}: the stream ends`);
      const again = await openSse(url);
      t.equal(again.status, 401, `${action}: reconnecting with the same URL gets 401`);
    }
  });
});
