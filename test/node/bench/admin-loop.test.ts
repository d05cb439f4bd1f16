/**
 * The isolation scenario's admin loop as a child process (bench/admin-loop.ts): with `"warm":true`
 * it sends one round of its requests, in order, and prints them as `warm {"records":[…]}` before
 * `ready`; then SIGUSR1 starts the loop and SIGUSR2 stops it and prints what it sent since. Against
 * a local server that answers every route (a GraphQL page with a next cursor, which the loop
 * carries over), not a node: what is tested is the child's protocol, not the node's answers.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { ADMIN_ROUTES } from '../../../bench/admin-loop.js';
import { startChild } from '../../../bench/proc.js';
import { requireFreshDist } from '../../helpers/dist.js';
import { until } from '../../helpers/proc.js';
import { projectPath } from '../../../src/util/paths.js';

interface Seen {
  method: string;
  url: string;
  key: string | undefined;
  body: string;
}

t.test('warm round before ready, then the loop on SIGUSR1 and its records on SIGUSR2', async (t) => {
  requireFreshDist();
  const seen: Seen[] = [];
  const server = createServer((q: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    q.on('data', (c: Buffer) => chunks.push(c));
    q.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: q.method ?? '', url: q.url ?? '', key: q.headers['x-management-key'] as string | undefined, body });
      const answer = q.url === '/api/graphql' ? { data: { flagConnection: { nodes: [], pageInfo: { endCursor: 'c1', hasNextPage: true }, totalCount: 0 } } } : {};
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const key = 'ab'.repeat(32);
  const child = startChild('admin-loop', process.execPath, [projectPath('dist', 'bench', 'admin-loop.js'), JSON.stringify({ baseUrl, key, warm: true })]);
  t.teardown(() => child.stop());
  // Both waiters at once (a waiter sees only lines printed after it): the order they resolve in is the order printed.
  const order: string[] = [];
  const warmed = child.waitForLine(/^warm (\{.*\})$/, 30_000).then((m) => (order.push('warm'), m));
  const ready = child.waitForLine(/^ready$/, 30_000).then(() => order.push('ready'));
  const [[, warmJson]] = await Promise.all([warmed, ready]);
  t.same(order, ['warm', 'ready'], 'the warm line comes before ready');
  const warm = JSON.parse(warmJson) as { records: { route: string; outcome: string }[] };
  t.same(warm.records.map((r) => r.route), ADMIN_ROUTES.map((r) => r.route), 'one request of each route, in the loop\'s order');
  t.same([...new Set(warm.records.map((r) => r.outcome))], ['200'], 'each answered 200');
  t.equal(seen.length, 1 + ADMIN_ROUTES.length, 'the server saw the health check and one round, nothing more before the loop starts');
  t.same([...new Set(seen.slice(1).map((s) => s.key))], [key], 'every admin request carries the admin key');

  const before = seen.length;
  const records = child.waitForLine(/^(\{"records":.*\})$/, 30_000);
  child.proc.kill('SIGUSR1');
  t.ok(await until(() => seen.slice(before).some((s) => s.url === '/api/graphql'), 10_000), 'the loop reached its GraphQL page');
  child.proc.kill('SIGUSR2');
  const sent = (JSON.parse((await records)[1]) as { records: { route: string }[] }).records;
  t.equal(sent[0].route, ADMIN_ROUTES[0].route, 'the loop starts a new round after the warm one');
  t.equal(seen.length - before, sent.length, 'its records are exactly what it sent after the warm round');
  const graphql = seen.slice(before).find((s) => s.url === '/api/graphql')!;
  t.equal((JSON.parse(graphql.body) as { variables: { after: string | null } }).variables.after, 'c1', 'the warm round\'s GraphQL cursor carries over to the loop');
});
