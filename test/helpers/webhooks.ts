/**
 * Helpers of the webhook suites (docs/webhooks.md): a real HTTP receiver on a free port that
 * records every request and answers as each test says, and signature checks made with the
 * `standardwebhooks` package (the reference implementation), never with our own HMAC.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { TestNode } from './node.js';

/** Node settings of the webhook suites: local http receivers, short retries and polls. */
export const WEBHOOK_ENV = {
  VEXIL_WEBHOOK_ALLOW_HTTP: '1',
  VEXIL_WEBHOOK_ALLOW_PRIVATE: '1',
  VEXIL_WEBHOOK_RETRY_BASE_MS: '100',
  VEXIL_WEBHOOK_RETRY_MAX_MS: '400',
  VEXIL_WEBHOOK_POLL_MS: '100',
  VEXIL_WEBHOOK_TIMEOUT_MS: '1500',
  VEXIL_RATE_LIMIT_MGMT: '100000',
};

export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
  /** The sender's port: one per connection (keep-alive reuses it). */
  port?: number;
}

export type Behaviour = (req: IncomingMessage, res: ServerResponse, r: Received) => void;

export class Receiver {
  readonly got: Received[] = [];
  private readonly behaviours = new Map<string, Behaviour>();
  private server!: Server;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const r: Received = { path: req.url ?? '', headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString('utf8'), at: Date.now(), port: req.socket.remotePort };
        this.got.push(r);
        const b = this.behaviours.get(r.path);
        if (b !== undefined) b(req, res, r);
        else res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** How `path` answers from now on (default 204). */
  on(path: string, b: Behaviour | null): void {
    if (b === null) this.behaviours.delete(path);
    else this.behaviours.set(path, b);
  }

  at(path: string): Received[] {
    return this.got.filter((r) => r.path === path);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

/**
 * Verifies a received message with `standardwebhooks` for `secret`: the parsed body, or throws.
 * The library checks the timestamp against now (5 min tolerance), every `v1,` signature given.
 */
export function verify(secret: string, r: Received): any {
  return new Webhook(secret).verify(r.body, { 'webhook-id': r.headers['webhook-id'], 'webhook-timestamp': r.headers['webhook-timestamp'], 'webhook-signature': r.headers['webhook-signature'] });
}

export async function createEndpoint(n: TestNode, body: Record<string, unknown>, key = n.adminKey) {
  return n.req('POST', '/api/webhooks', { key, body });
}

export async function deliveries(n: TestNode, id: string, query = '', key = n.adminKey): Promise<any[]> {
  const r = await n.req('GET', `/api/webhooks/${id}/deliveries${query === '' ? '' : `?${query}`}`, { key });
  if (r.status !== 200) throw new Error(`deliveries: ${r.status} ${r.text}`);
  return r.body;
}
