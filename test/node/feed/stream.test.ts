/**
 * `GET /sdk/v1/stream` (docs/feed.md, "The stream") over real HTTP, on both fronts: a `snapshot`
 * event (the snapshot's body), then one `change` event per change of the feed within 1 s, carrying
 * only what changed (one flag, a deleted flag's name, a segment, the kill switch), each with the
 * version it brings and the version it follows, in order; nothing for another application's flag;
 * the changes applied to the first snapshot give the current one; a disabled, rotated or deleted
 * key ends the stream;
 * at most VEXIL_SSE_MAX_STREAMS_PER_KEY streams per key, OFREP's and the feed's together (429
 * problem+json with Retry-After).
 */
import t from 'tap';
import { applyFeedChange, readFeedSnapshot, type FeedSnapshot } from '../../../src/engine/feed-decode.js';
import { loadNativeUws } from '../../../src/http/uws.js';
import type { TestNode } from '../../helpers/node.js';
import { openSse, within, type SseStream } from '../../helpers/sse.js';
import { createOrg, deleteFlag, evalKey, expectProblem, must, postConfig, postFlag, setKillSwitch, startNode } from '../../helpers/flags.js';

const native = loadNativeUws().ok;
const MAX = 2;

const streamOf = (n: TestNode, key: string, query = '?stage=production') => openSse(`${n.url}/sdk/v1/stream${query}`, { 'x-api-key': key });

for (const front of ['uws', 'node'] as const) {
  t.test(`${front} front`, { skip: front === 'uws' && !native && 'no native uWebSockets.js binary loads here' }, async (t) => {
    const n = await startNode(t, { env: { VEXIL_HTTP_FRONT: front === 'node' ? 'node' : 'auto', VEXIL_SSE_MAX_STREAMS_PER_KEY: String(MAX) } });
    t.equal(n.node.front.kind, front);
    const org = await createOrg(n, ['development', 'production'], ['web', 'other']);
    const admin = org.adminKey;
    must(t, await n.req('POST', '/api/segments', { key: admin, body: { name: 'beta', conditions: [{ field: 'plan', operator: '==', value: 'beta' }] } }), 201, 'beta');
    for (const [name, project] of [['w1', 'web'], ['w2', 'web'], ['o1', 'other']]) {
      must(t, await postFlag(n, admin, name, { project }), 201, name);
      must(t, await postConfig(n, admin, name), 200, `${name} config`);
    }
    const rule = { id: 'r1', priority: 1, conditions: [], segments: ['beta'], allocations: [{ variantKey: 'on', percentage: 100 }] };
    must(t, await postConfig(n, admin, 'w2', { rules: [rule] }), 200, 'w2 names beta');
    const key = await evalKey(n, admin, 'web');
    const open: SseStream[] = [];
    t.teardown(() => open.forEach((s) => s.close()));

    t.test('a snapshot event, then change events carrying only what changed, in version order', async (t) => {
      const s = await streamOf(n, key);
      open.push(s);
      t.equal(s.status, 200);
      t.match(s.headers.get('content-type'), /^text\/event-stream/);
      const first = await s.nextEvent(1000);
      t.equal(first?.name, 'snapshot', 'a snapshot event first');
      let held: FeedSnapshot = readFeedSnapshot(JSON.parse(first!.data));
      const got = await n.req('GET', '/sdk/v1/snapshot?stage=production', { key });
      t.same({ ...held, version: 0 }, { ...got.body, version: 0 }, 'the same body as GET /sdk/v1/snapshot');

      const changes: any[] = [];
      const expectChange = async (what: string, write: () => Promise<unknown>, fields: string[]) => {
        const started = Date.now();
        await write();
        const ev = await s.nextEvent(1000);
        t.equal(ev?.name, 'change', `${what}: a change event after ${Date.now() - started} ms`);
        const c = JSON.parse(ev!.data);
        t.same(Object.keys(c), ['format', 'version', 'follows', ...fields], `${what}: carries ${fields.join(', ')}`);
        t.equal(c.follows, held.version, `${what}: follows the version held`);
        t.ok(c.version > c.follows, `${what}: brings a later version`);
        held = applyFeedChange(held, c)!;
        changes.push(c);
        return c;
      };

      const one = await expectChange('a configuration change of w1', () => postConfig(n, admin, 'w1', { defaultVariantKey: 'on' }), ['flags']);
      t.same(one.flags.map((f: any) => f.flag.name), ['w1'], 'that flag alone');
      t.equal(one.flags[0].configs[0].defaultVariantKey, 'on');

      must(t, await postConfig(n, admin, 'o1', { defaultVariantKey: 'on' }), 200, 'o1 changes');
      must(t, await postConfig(n, admin, 'w1', { stage: 'development' }), 200, 'w1 development');
      t.equal(await s.next(400), null, 'another application, another stage: no event');

      const seg = await expectChange(
        'a segment change',
        () => n.req('PUT', '/api/segments/beta', { key: admin, body: { conditions: [{ field: 'plan', operator: 'in', value: ['beta', 'pro'] }] } }),
        ['segments'],
      );
      t.same(seg.segments.map((x: any) => x.name), ['beta']);
      t.equal(seg.segments[0].conditions[0].operator, 'in');

      const ks = await expectChange('a kill switch', () => setKillSwitch(n, admin, [{ flag: 'w2' }, { flag: 'o1' }]), ['organization']);
      t.same(ks.organization.killSwitch, [{ flag: 'w2', application: null, environment: null }], 'the rules that can match');
      await setKillSwitch(n, admin, [{ flag: 'w2' }, { flag: 'o1' }, { application: 'other' }]);
      t.equal(await s.next(400), null, 'a kill-switch rule that cannot match: no event');

      const dep = await expectChange(
        'w1 comes to depend on o1 (another application)',
        () => n.req('PUT', '/api/flags/w1', { key: admin, body: { dependencies: [{ flag: 'o1', variants: null }] } }),
        ['organization', 'flags'],
      );
      t.same(dep.flags.map((f: any) => f.flag.name), ['o1', 'w1'], 'w1, and o1 as a parent');
      t.same(dep.organization.killSwitch.map((r: any) => r.flag ?? r.application), ['w2', 'o1', 'other'], 'the rules that can now match o1');
      const parent = await expectChange("a change of the parent o1", () => postConfig(n, admin, 'o1', { defaultVariantKey: 'off' }), ['flags']);
      t.same(parent.flags.map((f: any) => f.flag.name), ['o1']);
      const dropped = await expectChange('w1 no longer depends on o1', () => n.req('PUT', '/api/flags/w1', { key: admin, body: { dependencies: [] } }), ['organization', 'flags', 'removedFlags']);
      t.same(dropped.removedFlags, ['o1'], 'o1 leaves the feed');

      const created = await expectChange('a new flag', () => postFlag(n, admin, 'w3'), ['flags']);
      t.same(created.flags.map((f: any) => f.flag.name), ['w3']);
      const deleted = await expectChange('a deletion', () => deleteFlag(n, admin, 'w3'), ['removedFlags']);
      t.same(deleted.removedFlags, ['w3'], "the deleted flag's name");

      // Versions only grow, each event follows the one before.
      for (let i = 1; i < changes.length; i++) {
        t.equal(changes[i].follows, changes[i - 1].version, `event ${i + 1} follows event ${i}`);
        t.ok(changes[i].version > changes[i - 1].version, `event ${i + 1}: a later version`);
      }
      const now = await n.req('GET', '/sdk/v1/snapshot?stage=production', { key });
      t.same({ ...held, version: 0 }, { ...now.body, version: 0 }, 'the first snapshot with every change applied is the current snapshot');
      t.equal(applyFeedChange(held, { ...changes[0] }), null, 'a change that does not follow the version held is a gap');
      t.notOk(s.isEnded, 'the stream stays open');
    });

    t.test(`at most ${MAX} streams per key, OFREP's counted too; a disabled key ends its streams`, async (t) => {
      const k2 = await evalKey(n, admin, 'web', 'production');
      const feed = await streamOf(n, k2, '');
      const bulk = await n.req('POST', '/ofrep/v1/evaluate/flags', { key: k2, body: { context: { targetingKey: 'u1' } } });
      const ofrep = await openSse(bulk.body.eventStreams[0].url);
      const streams = [feed, ofrep];
      open.push(...streams);
      t.same(streams.map((s) => s.status), [200, 200], 'a feed stream (stage from the environment scope) and an OFREP stream');
      t.equal((await feed.nextEvent(1000))?.name, 'snapshot');
      const over = await streamOf(n, k2);
      expectProblem(t, { status: over.status, headers: over.headers, body: JSON.parse(over.text), text: over.text }, 429, 'RATE_LIMITED', /VEXIL_SSE_MAX_STREAMS_PER_KEY/);
      t.ok(Number(over.headers.get('retry-after')) >= 1, 'Retry-After');
      t.equal((await openSse(bulk.body.eventStreams[0].url)).status, 429, "OFREP's route counts the feed's stream too");
      const refused = await streamOf(n, k2, '?stage=development');
      t.equal(refused.status, 403, 'outside the environment scope: 403');
      const id = ((await n.req('GET', '/api/keys', { key: admin })).body as { id: string; environment: string | null }[]).find((k) => k.environment === 'production')!.id;
      must(t, await n.req('POST', `/api/keys/${id}/disable`, { key: admin }), 200, 'disable');
      for (const s of streams) t.ok(await within(s.ended, 1000), 'the stream ends within 1 s');
      t.equal((await streamOf(n, k2)).status, 401, 'reconnecting: 401');
    });

    t.test('a rotated or deleted key ends its streams too', async (t) => {
      const keyIds = async () => ((await n.req('GET', '/api/keys', { key: admin })).body as { id: string }[]).map((k) => k.id);
      for (const action of ['rotate', 'delete'] as const) {
        const before = new Set(await keyIds());
        const k = await evalKey(n, admin, 'web');
        const id = (await keyIds()).find((x) => !before.has(x))!;
        const s = await streamOf(n, k);
        open.push(s);
        t.equal((await s.nextEvent(1000))?.name, 'snapshot', `${action}: stream open`);
        const r = action === 'delete' ? await n.req('DELETE', `/api/keys/${id}`, { key: admin }) : await n.req('POST', `/api/keys/${id}/rotate`, { key: admin });
        t.ok(r.status === 200 || r.status === 204, `${action}: ${r.status}`);
        t.ok(await within(s.ended, 1000), `${action}: the stream ends within 1 s`);
        t.equal((await streamOf(n, k)).status, 401, `${action}: reconnecting with the old key: 401`);
      }
    });
  });
}
