/**
 * Cluster test tools: a private nats-server on a free port (stoppable without touching the shared
 * one), a TCP proxy that can cut a node off from PostgreSQL, and free-port lookup.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';

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
  private constructor(readonly port: number) {}

  static async start(): Promise<PrivateNats> {
    const n = new PrivateNats(await freePort());
    await n.restart();
    return n;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async restart(): Promise<void> {
    if (!NATS_BIN) throw new Error('nats-server binary not found');
    this.proc = spawn(NATS_BIN, ['-a', '127.0.0.1', '-p', String(this.port)], { stdio: 'ignore' });
    await waitForPort(this.port);
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
