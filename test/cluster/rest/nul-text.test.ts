/**
 * U+0000 in text (found by the REST fuzz suite: `DELETE /api/flags/%00` answered 500). PostgreSQL
 * (and PGlite) cannot store it in text or jsonb; it is the client's input, so 400 BAD_REQUEST,
 * problem+json, and nothing changes. Runs on PGlite, and on PostgreSQL when DATABASE_URL is set.
 */
import t from 'tap';
import { postgresUrl } from '../../helpers/node.js';
import { createOrg, expectProblem, expectRejectedUnchanged, getFlag, must, postConfig, postFlag, startNode } from '../../helpers/flags.js';

const stores = postgresUrl() ? (['pglite', 'postgres'] as const) : (['pglite'] as const);

for (const store of stores) {
  t.test(`NUL in text on ${store}: 400, nothing changed`, async (t) => {
    const n = await startNode(t, store === 'postgres' ? { db: 'postgres' } : {});
    const org = await createOrg(n, ['production'], ['web']);
    const admin = org.adminKey;
    must(t, await postFlag(n, admin, 'kept'), 201, 'kept');
    must(t, await postConfig(n, admin, 'kept'), 200, 'kept config');
    const nulName = '/api/flags/%00';
    // By the store (the name reaches the database) or by validation (the field names the cause).
    const writes: [string, () => ReturnType<typeof n.req>, RegExp][] = [
      ['DELETE a flag named NUL', () => n.req('DELETE', nulName, { key: admin }), /^Text must not contain the NUL character/],
      ['PUT a flag named NUL', () => n.req('PUT', nulName, { key: admin, body: { description: 'x' } }), /NUL character/],
      ['a configuration of a flag named a\\0b', () => postConfig(n, admin, 'a\u0000b'), /NUL character/],
      ['a description with NUL', () => n.req('PUT', '/api/flags/kept', { key: admin, body: { description: 'a\u0000b' } }), /^description: must not contain the NUL/],
      ['a tag with NUL', () => n.req('PUT', '/api/flags/kept', { key: admin, body: { tags: ['a\u0000'] } }), /^tags\[0\]: must not contain the NUL/],
      ['a variant value with NUL', () => postFlag(n, admin, 'fresh', { type: 'string', variants: [{ key: 'v', value: 'a\u0000', valueType: 'string' }] }), /NUL/],
    ];
    for (const [what, write, detail] of writes) {
      t.test(what, async (t) => expectProblem(t, await write(), 400, 'BAD_REQUEST', detail));
    }
    await expectRejectedUnchanged(t, n, admin, 'kept', () => n.req('DELETE', nulName, { key: admin }), 400, 'BAD_REQUEST', /NUL/);
    t.equal((await getFlag(n, admin, 'fresh')).status, 404, 'no flag was created');
  });
}
