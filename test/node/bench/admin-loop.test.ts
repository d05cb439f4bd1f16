/**
 * The isolation scenario's admin loop as a child process (bench/admin-loop.ts): with `"warm":true`
 * it sends one round of its requests, in order, and prints them as `warm {"records":[…]}` before
 * `ready`; then SIGUSR1 starts the loop and SIGUSR2 stops it and prints what it sent since. Against
 * a local server that answers every route (a GraphQL page with a next cursor, which the loop
 * carries over), not a node: what is tested is the child's protocol, not the node's answers.
 */
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { ADMIN_ROUTES } from '../../../bench/admin-loop.js';
import { requireFreshDist } from '../../helpers/dist.js';
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
  const child = spawn(process.execPath, [projectPath('dist', 'bench', 'admin-loop.js'), JSON.stringify({ baseUrl, key, warm: true })], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => void child.kill('SIGKILL'));
  const lines: string[] = [];
  const waiters: { re: RegExp; resolve: (l: string) => void }[] = [];
  let buf = '';
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString('utf8');
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      lines.push(line);
      const w = waiters.findIndex((x) => x.re.test(line));
      if (w >= 0) waiters.splice(w, 1)[0].resolve(line);
    }
  });
  const next = (re: RegExp): Promise<string> => {
    const had = lines.find((l) => re.test(l));
    return had !== undefined ? Promise.resolve(had) : new Promise((resolve) => waiters.push({ re, resolve }));
  };

  await next(/^ready$/);
  const warmIndex = lines.findIndex((l) => l.startsWith('warm '));
  t.ok(warmIndex >= 0 && warmIndex < lines.indexOf('ready'), 'the warm line comes before ready');
  const warm = JSON.parse(lines[warmIndex].slice('warm '.length)) as { records: { route: string; outcome: string }[] };
  t.same(warm.records.map((r) => r.route), ADMIN_ROUTES.map((r) => r.route), 'one request of each route, in the loop\'s order');
  t.same([...new Set(warm.records.map((r) => r.outcome))], ['200'], 'each answered 200');
  t.equal(seen.length, 1 + ADMIN_ROUTES.length, 'the server saw the health check and one round, nothing more before the loop starts');
  t.same([...new Set(seen.slice(1).map((s) => s.key))], [key], 'every admin request carries the admin key');

  const before = seen.length;
  child.kill('SIGUSR1');
  await new Promise((r) => setTimeout(r, 300));
  child.kill('SIGUSR2');
  const records = JSON.parse(await next(/^\{"records":/)) as { records: { route: string }[] };
  t.ok(records.records.length >= 1, `the loop ran (${records.records.length} requests)`);
  t.equal(records.records[0].route, ADMIN_ROUTES[0].route, 'the loop starts a new round after the warm one');
  t.equal(seen.length - before, records.records.length, 'its records are exactly what it sent after the warm round');
  const graphql = seen.slice(before).find((s) => s.url === '/api/graphql');
  if (graphql !== undefined) {
    t.equal((JSON.parse(graphql.body) as { variables: { after: string | null } }).variables.after, 'c1', 'the warm round\'s GraphQL cursor carries over to the loop');
  }
});
