/**
 * Cluster test tools: a private nats-server on a free port (stoppable without touching the shared
 * one), a TCP proxy that can cut a node off from PostgreSQL, free-port lookup, polling until a
 * condition holds, and a two-node setup.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import net from 'node:net';
import { connect, headers, type NatsConnection } from 'nats';
import type { Test } from 'tap';
import { SIGNATURE_HEADER } from '../../src/cluster/wire.js';
import type { StartOptions } from '../../src/node.js';
import postgres from 'postgres';
import { createFlag, createKey, evaluate, freshPostgresDatabase, request, startTestNode, upsertConfig, type TestNode } from './node.js';

export const NATS_BIN = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'].find((p) => existsSync(p));

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

async function waitForPort(port: number, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => (s.destroy(), resolve(true)));
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`port ${port} did not open`);
}

export class PrivateNats {
  private proc: ChildProcess | null = null;
  /** Called when the server exits without stop() (a crash, or a signal the test did not mean to end it). */
  onUnexpectedExit: ((code: number | null, signal: NodeJS.Signals | null) => void) | null = null;
  private constructor(readonly port: number, private readonly args: string[]) {}

  /** `args`: extra nats-server options (e.g. `['--user', 'u', '--pass', 'p']` or `['--auth', token]`). */
  static async start(args: string[] = []): Promise<PrivateNats> {
    const n = new PrivateNats(await freePort(), args);
    await n.restart();
    return n;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async restart(): Promise<void> {
    if (!NATS_BIN) throw new Error('nats-server binary not found');
    const proc = spawn(NATS_BIN, ['-a', '127.0.0.1', '-p', String(this.port), ...this.args], { stdio: 'ignore' });
    this.proc = proc;
    proc.once('exit', (code, signal) => {
      if (this.proc === proc) this.onUnexpectedExit?.(code, signal);
    });
    await waitForPort(this.port);
  }

  /** Sends a signal that does not end the server (SIGSTOP, SIGCONT); stop() is the way to kill it. */
  signal(sig: 'SIGSTOP' | 'SIGCONT'): void {
    this.proc?.kill(sig);
  }

  async stop(): Promise<void> {
    const p = this.proc;
    this.proc = null;
    if (p === null || p.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      p.once('exit', () => resolve());
      p.kill('SIGKILL');
    });
  }
}

/**
 * A fresh PostgreSQL database reached through a CuttableProxy (dropped with the test): start a node
 * on `databaseUrl`, then `proxy.cut()` to take the database away from it.
 */
export async function postgresBehindProxy(t: Test): Promise<{ proxy: CuttableProxy; databaseUrl: string }> {
  const db = await freshPostgresDatabase();
  t.teardown(db.drop);
  const target = new URL(db.url);
  const proxy = await CuttableProxy.start(target.hostname, Number(target.port || 5432));
  t.teardown(() => proxy.close());
  const viaProxy = new URL(db.url);
  viaProxy.port = String(proxy.port);
  return { proxy, databaseUrl: viaProxy.toString() };
}

/** A TCP proxy to `target`; `cut()` drops every connection and refuses new ones until `restore()`. */
export class CuttableProxy {
  private readonly sockets = new Set<net.Socket>();
  private cutOff = false;
  private constructor(private readonly server: net.Server, readonly port: number) {}

  static async start(targetHost: string, targetPort: number): Promise<CuttableProxy> {
    let self: CuttableProxy;
    const server = net.createServer((client) => {
      if (self.cutOff) {
        client.destroy();
        return;
      }
      const upstream = net.connect(targetPort, targetHost);
      self.sockets.add(client).add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        self.sockets.delete(client);
        self.sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream).pipe(client);
    });
    const port = await freePort();
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    self = new CuttableProxy(server, port);
    return self;
  }

  cut(): void {
    this.cutOff = true;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  restore(): void {
    this.cutOff = false;
  }

  close(): Promise<void> {
    this.cut();
    return new Promise((r) => this.server.close(() => r()));
  }
}

export async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 5000, stepMs = 10): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/**
 * Two nodes on a fresh PostgreSQL database and NATS_URL, on a subject of their own (busCluster: a
 * cluster test running beside another sees only its own nodes), with the safety poll off, so only
 * the bus carries changes; with flag `shared` (configured: `on` in production) and a CanEvaluate
 * key `ek` of application `default`, all written on node A. `extraEnv` is added to both nodes' settings.
 */
export async function twoNodesWithSharedFlag(
  t: { teardown(fn: () => unknown): void },
  extraEnv: Record<string, string> = {},
): Promise<{ a: TestNode; b: TestNode; ek: string }> {
  const {
    nodes: [a, b],
  } = await busCluster(t, 2, extraEnv);
  if ((await createFlag(a, 'shared')).status !== 201) throw new Error('create shared failed');
  if ((await upsertConfig(a, 'shared', { defaultVariantKey: 'on' })).status !== 200) throw new Error('configure shared failed');
  const ek = await createKey(a, { permissions: ['CanEvaluate'], application: 'default' });
  return { a, b, ek };
}

/**
 * Nodes on a fresh PostgreSQL database and the shared NATS_URL, on a subject of their own (so a
 * test's forged messages reach its own nodes only), with the safety poll off: only the bus (or
 * what the nodes read because of it) carries changes.
 */
export async function busCluster(
  t: { teardown(fn: () => unknown): void },
  count: number,
  env: Record<string, string> = {},
  /** Start options for every node (a logger, say); the bus subject is the test's own. */
  start: StartOptions = {},
): Promise<{ nodes: TestNode[]; subject: string; databaseUrl: string }> {
  const db = await freshPostgresDatabase();
  t.teardown(db.drop);
  const subject = `vexil.test.${randomBytes(6).toString('hex')}`;
  const all = { NATS_URL: process.env.NATS_URL!, VEXIL_SYNC_SAFETY_POLL_MS: '600000', ...env };
  const nodes: TestNode[] = [];
  for (let i = 0; i < count; i++) {
    nodes.push(await startTestNode(t, { databaseUrl: db.url, adminKey: nodes[0]?.adminKey, env: all, start: { ...start, busSubject: subject } }));
  }
  return { nodes, subject, databaseUrl: db.url };
}

/** A raw NATS client on a test's subject: publishes anything, and records what the nodes publish. */
export class BusTap {
  readonly seen: { data: Uint8Array; signature: string | undefined }[] = [];
  private constructor(private readonly nc: NatsConnection, private readonly subject: string) {}

  static async open(t: { teardown(fn: () => unknown): void }, subject: string): Promise<BusTap> {
    const nc = await connect({ servers: process.env.NATS_URL! });
    t.teardown(() => nc.close());
    const tap = new BusTap(nc, subject);
    nc.subscribe(subject, { callback: (err, msg) => !err && tap.seen.push({ data: msg.data, signature: msg.headers?.get(SIGNATURE_HEADER) }) });
    await nc.flush();
    return tap;
  }

  async publish(data: string | Uint8Array, signature?: string): Promise<void> {
    const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
    let h;
    if (signature !== undefined) {
      h = headers();
      h.set(SIGNATURE_HEADER, signature);
    }
    this.nc.publish(this.subject, bytes, h === undefined ? undefined : { headers: h });
    await this.nc.flush();
  }

  /** A well-formed message, as a node would send it, from `node`. */
  static envelope(event: unknown, node = `forger-${randomBytes(3).toString('hex')}`, ts = Date.now()): string {
    return JSON.stringify({ node, ts, nonce: randomBytes(16).toString('hex'), event });
  }
}

// ---- shared by the bus trust suites (test/cluster/bus-*.test.ts) ----

/** The evaluation context the bus suites evaluate `shared` with. */
export const SHARED_BODY = { userId: 'u', stage: 'production' };

/** Flag `shared` (production: `on`) written on the first node and seen on every node; an evaluation key. */
export async function seedShared(t: Test, nodes: TestNode[]): Promise<string> {
  const [a] = nodes;
  t.equal((await createFlag(a, 'shared')).status, 201);
  t.equal((await upsertConfig(a, 'shared', { defaultVariantKey: 'on' })).status, 200);
  const ek = await createKey(a, { permissions: ['CanEvaluate'], application: 'default' });
  for (const n of nodes) t.equal((await until(() => evaluate(n, ek, 'shared', SHARED_BODY), (r) => r.body?.key === 'on')).body?.key, 'on');
  return ek;
}

/** The organization's id and version, from the database itself. */
export async function orgRow(databaseUrl: string): Promise<{ id: string; version: number }> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql<{ id: string; version: number }[]>`select id, version from organizations where name = 'default'`;
    return row;
  } finally {
    await sql.end();
  }
}

/** Writes `variant` on node `w`, then measures how long until every node evaluates it. */
export async function propagates(t: Test, w: TestNode, nodes: TestNode[], ek: string, variant: string, what: string, withinMs = 1000): Promise<void> {
  t.equal((await upsertConfig(w, 'shared', { defaultVariantKey: variant })).status, 200, `${what}: write ${variant}`);
  const started = Date.now();
  for (const n of nodes) {
    const r = await until(() => evaluate(n, ek, 'shared', SHARED_BODY), (x) => x.body?.key === variant, 3000);
    t.equal(r.body?.key, variant, `${what}: ${n.url} serves ${variant}`);
  }
  const ms = Date.now() - started;
  t.ok(ms <= withinMs, `${what}: every node within ${ms} ms (≤ ${withinMs})`);
}

export const nodesSeen = async (n: TestNode): Promise<number> => (await request(n.url, 'GET', '/healthz')).body?.nodes;
