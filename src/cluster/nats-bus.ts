/**
 * The cluster bus on NATS: every node publishes its committed changes and key invalidations on one
 * subject and applies everybody else's. Core NATS (at-most-once) is enough because messages only
 * say "reload this"; what a node misses while NATS is away, the PostgreSQL poller (sync.ts) finds.
 *
 * The node starts even when NATS is down: the client keeps reconnecting in the background, and the
 * node polls PostgreSQL meanwhile.
 */
import { connect, type NatsConnection, type Subscription } from 'nats';
import type { Logger } from '../util/log.js';
import type { Bus, ClusterEvent } from './bus.js';
import { natsTarget, type NatsTarget } from './nats-options.js';

export const EVENTS_SUBJECT = 'vexil.events.v1';

interface Envelope {
  node: string;
  event: ClusterEvent;
}

export class NatsBus implements Bus {
  private nc: NatsConnection | null = null;
  private sub: Subscription | null = null;
  private readonly handlers: ((e: ClusterEvent) => void)[] = [];
  private readonly connectivity: ((up: boolean) => void)[] = [];
  private closed = false;
  private up = false;
  private readonly encoder = new TextEncoder();
  private readonly decoder = new TextDecoder();
  private readonly target: NatsTarget;

  constructor(
    /** `NATS_URL`: may carry credentials, which are never logged (nats-options.ts). */
    url: string,
    readonly nodeId: string,
    private readonly log: Logger,
    private readonly subject = EVENTS_SUBJECT,
    /** `VEXIL_NATS_CREDS`: a `.creds` file, or null. */
    credsFile: string | null = null,
  ) {
    this.target = natsTarget(url, credsFile);
  }

  get connected(): boolean {
    return this.up;
  }

  /** Starts connecting; resolves when connected or after `waitMs`, whichever comes first. */
  async start(waitMs = 2000): Promise<void> {
    const ready = new Promise<void>((resolve) => {
      this.onConnectivity((up) => up && resolve());
      setTimeout(resolve, waitMs).unref();
    });
    void this.connectLoop();
    await ready;
  }

  private async connectLoop(): Promise<void> {
    while (!this.closed) {
      try {
        const nc = await connect({
          ...this.target.options,
          name: `vexil-${this.nodeId}`,
          reconnect: true,
          maxReconnectAttempts: -1,
          reconnectTimeWait: 250,
          pingInterval: 2000,
          maxPingOut: 2,
        });
        if (this.closed) {
          await nc.close();
          return;
        }
        this.nc = nc;
        this.sub = nc.subscribe(this.subject, { callback: (err, msg) => !err && this.receive(msg.data) });
        await nc.flush();
        this.setUp(true);
        void this.watch(nc);
        return;
      } catch (err) {
        this.log.warn('NATS unreachable, retrying', { url: this.target.redacted, err: (err as Error).message });
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  private async watch(nc: NatsConnection): Promise<void> {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect') this.setUp(false);
      else if (s.type === 'reconnect') this.setUp(true);
    }
  }

  private setUp(up: boolean): void {
    if (this.up === up) return;
    this.up = up;
    this.log.info(up ? 'NATS connected' : 'NATS disconnected', { url: this.target.redacted });
    for (const h of this.connectivity) h(up);
  }

  private receive(data: Uint8Array): void {
    let env: Envelope;
    try {
      env = JSON.parse(this.decoder.decode(data)) as Envelope;
    } catch {
      return;
    }
    if (env.node === this.nodeId) return;
    for (const h of this.handlers) h(env.event);
  }

  publish(event: ClusterEvent): void {
    if (this.nc === null || this.nc.isClosed()) return;
    try {
      // While disconnected the client buffers and sends on reconnect; the poller covers losses.
      this.nc.publish(this.subject, this.encoder.encode(JSON.stringify({ node: this.nodeId, event } satisfies Envelope)));
    } catch (err) {
      this.log.warn('NATS publish failed', { err: (err as Error).message });
    }
  }

  onEvent(handler: (event: ClusterEvent) => void): void {
    this.handlers.push(handler);
  }

  onConnectivity(handler: (up: boolean) => void): void {
    this.connectivity.push(handler);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.sub?.unsubscribe();
    if (this.nc !== null && !this.nc.isClosed()) await this.nc.drain().catch(() => this.nc?.close());
  }
}
