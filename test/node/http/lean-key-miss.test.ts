/**
 * The evaluation route is lean (src/http/router.ts, Route.lean): on the uWS front its handler is
 * lent the body's last chunk as uWS received it, and the bytes are copied only when the handler
 * has not answered by the time the chunk's callback returns. A request whose key is not in memory
 * waits for the key's lookup before it reads its body: each such evaluation (REST, OFREP single and
 * bulk) must still see its own body, on one thread, and relayed from other front threads to the main one and evaluated in the
 * worker pool. Real nodes, real HTTP; keys are made to miss the cache with a short
 * VEXIL_KEY_CACHE_TTL_MS and VEXIL_KEY_STALE_MAX_MS=0 (no serving past the lifetime even with the database down: an expired key is looked up).
 */
import t from 'tap';
import { createOrg, evalKey, must, postConfig, postFlag, startNode } from '../../helpers/flags.js';
import { loadNativeUws } from '../../../src/http/uws.js';

const native = loadNativeUws().ok && process.env.VEXIL_HTTP_FRONT !== 'node';
const TTL = 200;
const KEYS = 16;

const setups = [
  { name: 'one front thread', env: { VEXIL_FRONT_THREADS: '1' } },
  { name: 'three front threads (relayed) and the worker pool', env: { VEXIL_FRONT_THREADS: '3', VEXIL_EVAL_WORKERS: '2', VEXIL_EVAL_HANDOFF: 'always' } },
];

for (const s of setups) {
  t.test(`evaluations that wait for their key keep their own bodies: ${s.name}`, { skip: native ? false : 'no native uWebSockets.js front here' }, async (t) => {
    const n = await startNode(t, { env: { VEXIL_KEY_CACHE_TTL_MS: String(TTL), VEXIL_KEY_STALE_MAX_MS: '0', ...s.env } });
    const org = await createOrg(n);
    const nl = { id: 'nl', priority: 1, conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'on', percentage: 100 }] };
    must(t, await postFlag(n, org.adminKey, 'f'), 201, 'flag');
    must(t, await postConfig(n, org.adminKey, 'f', { stage: 'production', defaultVariantKey: 'off', rules: [nl] }), 200, 'config');
    const keys: string[] = [];
    for (let i = 0; i < KEYS; i++) keys.push(await evalKey(n, org.adminKey, 'web'));

    for (let round = 0; round < 3; round++) {
      await new Promise((r) => setTimeout(r, TTL + 100)); // every key past its lifetime: each request below looks its key up
      // Bodies of different sizes and answers, all in flight together, each on its own connection,
      // over the three lean routes: REST, OFREP single and OFREP bulk.
      const sent = keys.map((key, i) => {
        const country = (i + round) % 2 === 0 ? 'NL' : 'DE';
        const pad = String(i % 10).repeat(20 + i * 97);
        const headers = { connection: 'close' };
        const ofrepContext = { targetingKey: `u${i}`, stage: 'production', country, pad };
        const via = ['rest', 'ofrep', 'bulk'][i % 3];
        const r =
          via === 'rest'
            ? n.req('POST', '/flags/f?explain=true', { key, body: { userId: `u${i}`, stage: 'production', context: { country, pad } }, headers })
            : via === 'ofrep'
              ? n.req('POST', '/ofrep/v1/evaluate/flags/f', { key, body: { context: ofrepContext }, headers })
              : n.req('POST', '/ofrep/v1/evaluate/flags', { key, body: { context: ofrepContext }, headers });
        return r.then((r) => ({ r, country, via }));
      });
      for (const { r, country, via } of await Promise.all(sent)) {
        t.equal(r.status, 200, `round ${round}, ${via}: evaluated (${r.text.slice(0, 120)})`);
        const variant = via === 'rest' ? r.body?.key : via === 'ofrep' ? r.body?.variant : r.body?.flags?.find((f: { key: string }) => f.key === 'f')?.variant;
        t.equal(variant, country === 'NL' ? 'on' : 'off', `round ${round}, ${via}: the answer of its own body (country ${country})`);
      }
    }
  });
}
