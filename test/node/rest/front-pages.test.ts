/**
 * Small plain pages of `GET /api/flags` are answered by the front thread from its replica
 * (features/flags/front-page.ts; docs/cluster.md, "Management never starves"), so that a paged
 * admin read never waits behind the management actor. A real node process, both HTTP fronts:
 * - with the actor stopped (SIGSTOP: a starved actor, as far as the front can tell), such a page
 *   still answers, and a request the front forwards (another filter) waits for the actor;
 * - every page the front answers equals the actor's answer to the same page (asked with a filter
 *   that matches every flag, so that the front forwards it), application scopes included;
 * - a write's answer comes after the front holds it: the next page shows it (read-your-writes);
 * - what the front does not answer (no CanRead, a bad query, a page over 100) is the actor's as before.
 */
import t from 'tap';
import { rmSync } from 'node:fs';
import { boolVariants, pgliteCopy } from '../../helpers/node.js';
import { spawnNode } from '../../helpers/process.js';
import { actorsOf } from '../../helpers/proc.js';

t.setTimeout(180_000);

const ADMIN_KEY = 'fe'.repeat(32);

interface Answer {
  status: number;
  json: any;
  total: string | null;
  link: string | null;
  type: string | null;
}

async function get(url: string, path: string, key: string, timeoutMs = 30_000): Promise<Answer> {
  const r = await fetch(url + path, { headers: { 'x-management-key': key }, signal: AbortSignal.timeout(timeoutMs) });
  const text = await r.text();
  return { status: r.status, json: text === '' ? null : JSON.parse(text), total: r.headers.get('x-total-count'), link: r.headers.get('link'), type: r.headers.get('content-type') };
}

async function send(url: string, method: string, path: string, key: string, body: unknown): Promise<{ status: number; json: any }> {
  const r = await fetch(url + path, { method, headers: { 'x-management-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, json: text === '' ? null : JSON.parse(text) };
}

for (const front of ['uws', 'node'] as const) {
  t.test(`${front} front: small plain pages are the front's, equal to the actor's, and answered while the actor is stopped`, { skip: process.platform === 'win32' ? 'no SIGSTOP' : false }, async (t) => {
    const dir = await pgliteCopy();
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const env: Record<string, string> = { VEXIL_DATA_DIR: dir, VEXIL_BOOTSTRAP_ADMIN_KEY: ADMIN_KEY, VEXIL_RATE_LIMIT_MGMT: '100000' };
    if (front === 'node') env.VEXIL_HTTP_FRONT = 'node';
    const node = await spawnNode(t, { env });
    const url = node.url;
    const apps = await send(url, 'POST', '/api/graphql', ADMIN_KEY, { query: 'mutation { replaceApplications(applications: ["default", "web"]) }' });
    t.same(apps.json?.data?.replaceApplications, ['default', 'web'], 'an application "web"');
    // Created out of name order (page-10 sorts before page-2): the front's index sorts them, in slices.
    for (let i = 0; i < 23; i++) {
      const r = await send(url, 'POST', '/api/flags', ADMIN_KEY, { name: `page-${i}`, project: i % 3 === 0 ? 'web' : 'default', type: 'boolean', variants: boolVariants });
      t.equal(r.status, 201, `flag ${i}`);
    }
    const scoped = await send(url, 'POST', '/api/keys', ADMIN_KEY, { name: 'web-reader', permissions: ['CanRead'], application: 'web' });
    t.equal(scoped.status, 201, 'a key scoped to "web"');
    const evaluator = await send(url, 'POST', '/api/keys', ADMIN_KEY, { name: 'no-read', permissions: ['CanEvaluate'] });
    t.equal(evaluator.status, 201, 'a key without CanRead');

    // The front built its index when the organization arrived whole (the warm load), before any page
    // was asked for: the first page is the front's, even with the actor stopped.
    const [actor] = actorsOf(node.child.pid!);
    t.ok(actor, 'the management actor process');
    t.teardown(() => {
      try {
        process.kill(actor, 'SIGCONT');
      } catch {
        // gone
      }
    });
    process.kill(actor, 'SIGSTOP');
    const first = await get(url, '/api/flags?limit=5', ADMIN_KEY, 5000).catch((e: Error) => ({ status: e.name }) as Answer);
    process.kill(actor, 'SIGCONT');
    t.equal(first.status, 200, 'the first page asked for answers with the actor stopped');
    t.same(first.json?.map((f: { name: string }) => f.name), ['page-0', 'page-1', 'page-10', 'page-11', 'page-12'], 'in name order');

    // Every page with page sizes 1, 4 and 10, from the front (plain) and from the actor (`archived=false`
    // matches every flag here, and the front forwards any filter but `application`).
    for (const [key, who, query] of [
      [ADMIN_KEY, 'admin', ''],
      [ADMIN_KEY, 'admin, application=web', '&application=web'],
      [scoped.json.key as string, 'a key scoped to web', ''],
    ] as const) {
      for (const size of [1, 4, 10]) {
        let after = '';
        let pages = 0;
        let same = true;
        for (;;) {
          const front = await get(url, `/api/flags?limit=${size}${query}${after}`, key);
          const actor = await get(url, `/api/flags?limit=${size}${query}&archived=false${after}`, key);
          same &&= front.status === 200 && actor.status === 200 && JSON.stringify(front.json) === JSON.stringify(actor.json) && front.total === actor.total && front.type === actor.type;
          same &&= (front.link === null) === (actor.link === null) && (front.link === null || front.link.replace('&archived=false', '') === actor.link!.replace('&archived=false', ''));
          pages++;
          if (front.link === null || pages > 30) break;
          after = `&after=${front.json[front.json.length - 1].name}`;
        }
        t.ok(same, `${who}, pages of ${size}: ${pages} pages, each equal to the actor's (flags, X-Total-Count, Link, Content-Type)`);
      }
    }

    // Read-your-writes: a write's answer comes after the front applied it.
    t.equal((await send(url, 'POST', '/api/flags', ADMIN_KEY, { name: 'page-00a', project: 'default', type: 'boolean', variants: boolVariants })).status, 201);
    const afterWrite = await get(url, '/api/flags?limit=2', ADMIN_KEY);
    t.same(afterWrite.json.map((f: { name: string }) => f.name), ['page-0', 'page-00a'], 'the page right after the write shows the new flag');
    t.equal(afterWrite.total, '24', 'and counts it');

    // What the front does not answer stays the actor's.
    t.equal((await get(url, '/api/flags?limit=5', evaluator.json.key)).status, 403, 'no CanRead: 403 (from the actor)');
    t.equal((await get(url, '/api/flags?limit=0', ADMIN_KEY)).status, 400, 'a bad limit: 400');
    t.equal((await get(url, '/api/flags?limit=5&limit=6', ADMIN_KEY)).status, 400, 'a repeated parameter: 400');

    // The actor stopped: the front still answers its pages; a forwarded request waits.
    process.kill(actor, 'SIGSTOP');
    const started = Date.now();
    const page = await get(url, '/api/flags?limit=3&after=page-10', ADMIN_KEY, 5000).catch((e: Error) => ({ status: e.name }) as Answer);
    t.equal(page.status, 200, 'a small plain page answers with the actor stopped');
    t.same(page.json?.map((f: { name: string }) => f.name), ['page-11', 'page-12', 'page-13'], 'the right page');
    t.comment(`answered in ${Date.now() - started} ms`);
    const forwarded = get(url, '/api/flags?limit=3&type=boolean', ADMIN_KEY);
    const early = await Promise.race([forwarded.then((r) => r.status), new Promise((r) => setTimeout(() => r('no answer'), 1000))]);
    t.equal(early, 'no answer', 'a page with another filter is forwarded: it waits for the stopped actor');
    const big = get(url, '/api/flags?limit=101', ADMIN_KEY);
    t.equal(await Promise.race([big.then((r) => r.status), new Promise((r) => setTimeout(() => r('no answer'), 500))]), 'no answer', 'so does a page over 100');
    process.kill(actor, 'SIGCONT');
    t.equal((await forwarded).status, 200, 'answered once the actor runs again');
    t.equal((await big).status, 200, 'both');
    await node.kill('SIGTERM');

    // Started again on the same data: the warm load brings the organization whole, and the front
    // builds its index then, so the first page after the start is the front's too.
    const again = await spawnNode(t, { env });
    const [actor2] = actorsOf(again.child.pid!);
    t.teardown(() => {
      try {
        process.kill(actor2, 'SIGCONT');
      } catch {
        // gone
      }
    });
    // The admin key is looked up once (through the actor) by a request the front forwards.
    t.equal((await get(again.url, '/api/flags?limit=1&type=boolean', ADMIN_KEY)).status, 200, 'the key known again');
    process.kill(actor2, 'SIGSTOP');
    const afterStart = await get(again.url, '/api/flags?limit=2&after=page-9', ADMIN_KEY, 5000).catch((e: Error) => ({ status: e.name }) as Answer);
    process.kill(actor2, 'SIGCONT');
    t.equal(afterStart.status, 200, 'after a restart, the first page asked for answers with the actor stopped');
    t.same(afterStart.json?.map((f: { name: string }) => f.name), [], 'page-9 is the last name');
    t.equal(afterStart.total, '24', 'every flag counted');
    await again.kill('SIGTERM');
  });
}
