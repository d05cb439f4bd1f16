/**
 * The cluster bus on NATS: every node publishes its committed changes and key invalidations on one
 * subject and applies everybody else's. Core NATS (at-most-once) is enough because messages only
 * say "look again"; what a node misses while NATS is away, the PostgreSQL poller (sync.ts) finds.
 * Every message received goes through wire.ts (size, schema, signature, replay) first; one it
 * rejects is counted by reason and dropped, and no message or handler can stop the reader.
 *
 * The node starts even when NATS is down: the client keeps reconnecting in the background, and the
 * node polls PostgreSQL meanwhile.
 */
import { connect, headers, type Msg, type NatsConnection, type Subscription } from 'nats';
import type { Logger } from '../util/log.js';
import type { Bus, ClusterEvent } from './bus.js';
import { natsTarget, type NatsTarget } from './nats-options.js';
import { BusCodec, REJECT_REASONS, SIGNATURE_HEADER, type RejectReason } from './wire.js';

export const EVENTS_SUBJECT = 'vexil.events.v1';

/** How often at most a summary of rejected messages is logged. */
const REJECT_LOG_MS = 60_000;

export interface NatsBusOptions {
  /** `NATS_URL`: may carry credentials, which are never logged (nats-options.ts). */
  url: string;
  nodeId: string;
  log: Logger;
  /** `VEXIL_NATS_CREDS`: a `.creds` file, or null. */
  credsFile?: string | null;
  /** `VEXIL_CLUSTER_SECRET`: sign every message, accept only signed ones. */
  secret?: string | null;
  /** Another subject than EVENTS_SUBJECT (tests: one cluster per test on a shared server). */
  subject?: string;
}

export class NatsBus implements Bus {
  private nc: NatsConnection | null = null;
  private sub: Subscription | null = null;
  private readonly handlers: ((e: ClusterEvent) => void)[] = [];
  private readonly connectivity: ((up: boolean) => void)[] = [];
  private closed = false;
  private up = false;
  private readonly target: NatsTarget;
  private readonly codec: BusCodec;
  private readonly log: Logger;
  private readonly subject: string;
  readonly nodeId: string;
  /** Messages rejected since start, by reason (vexil_bus_rejected_total). */
  readonly rejected = new Map<RejectReason, number>(REJECT_REASONS.map((r) => [r, 0]));
  private rejectLoggedAt = 0;
  private rejectedSinceLog = 0;

  constructor(opts: NatsBusOptions) {
    this.nodeId = opts.nodeId;
    this.log = opts.log;
    this.subject = opts.subject ?? EVENTS_SUBJECT;
    this.target = natsTarget(opts.url, opts.credsFile ?? null);
    this.codec = new BusCodec(opts.nodeId, opts.secret ?? null);
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
        this.sub = nc.subscribe(this.subject, { callback: (err, msg) => !err && this.receive(msg) });
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

  private receive(msg: Msg): void {
    let signature: string | undefined;
    try {
      signature = msg.headers?.get(SIGNATURE_HEADER);
    } catch {
      this.reject('malformed'); // a header block the client cannot parse
      return;
    }
    const decoded = this.codec.decode(msg.data, signature);
    if (!decoded.ok) {
      this.reject(decoded.reason);
      return;
    }
    const { node, event } = decoded.message;
    if (node === this.nodeId) return;
    for (const h of this.handlers) {
      try {
        h(event);
      } catch (err) {
        this.log.warn('a bus event handler failed', { kind: event.kind, err: err as Error });
      }
    }
  }

  private reject(reason: RejectReason): void {
    this.rejected.set(reason, (this.rejected.get(reason) ?? 0) + 1);
    this.rejectedSinceLog++;
    const now = Date.now();
    if (now - this.rejectLoggedAt < REJECT_LOG_MS) return;
    this.log.warn('bus messages rejected', { count: this.rejectedSinceLog, last: reason });
    this.rejectLoggedAt = now;
    this.rejectedSinceLog = 0;
  }

  publish(event: ClusterEvent): void {
    if (this.nc === null || this.nc.isClosed()) return;
    try {
      const { data, signature } = this.codec.encode(event);
      let h;
      if (signature !== null) {
        h = headers();
        h.set(SIGNATURE_HEADER, signature);
      }
      // While disconnected the client buffers and sends on reconnect; the poller covers losses.
      this.nc.publish(this.subject, data, h === undefined ? undefined : { headers: h });
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
