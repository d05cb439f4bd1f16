/**
 * The webhook dispatcher (docs/webhooks.md, "Delivery"): sends the outbox's messages. It runs in
 * the management actor (src/management/actor.ts), never on a front thread.
 *
 * - Claims: due messages are claimed in the database (store.ts `claimDue`: `FOR UPDATE SKIP
 *   LOCKED` and a lease longer than an attempt can last), so exactly one node makes each attempt;
 *   only an endpoint's oldest pending message is ever due, so an endpoint gets its messages in
 *   commit order, the next once the earlier one is delivered or given up.
 * - Concurrency: each claimed attempt runs on its own (one per endpoint, at most
 *   VEXIL_WEBHOOK_CONCURRENCY on the node): a slow or failing endpoint delays no other.
 * - Timing: woken after this process commits a write that queued messages (outbox.ts), by a
 *   timer for the soonest retry, and by a poll every VEXIL_WEBHOOK_POLL_MS (other nodes' writes).
 * - A node that dies mid-attempt leaves its lease to run out: another node (or this one,
 *   restarted) makes the attempt again, with the same `webhook-id` (at least once).
 */
import { randomUUID } from 'node:crypto';
import type { ActorRuntime } from '../../runtime.js';
import { eventById } from '../audit/store.js';
import type { Resolve } from './address.js';
import { onQueued } from './outbox.js';
import { decide, parseRetryAfter, type RetryPolicy } from './retry.js';
import { openSecret } from './secrets.js';
import { send, type SendResult } from './send.js';
import { webhookHeaders } from './signature.js';
import * as store from './store.js';

/** Delivery results counted by `vexil_webhook_deliveries_total{result}`. */
export const DELIVERY_RESULTS = ['success', 'retry', 'gave_up', 'disabled'] as const;
export type DeliveryResult = (typeof DELIVERY_RESULTS)[number];

/** Finished messages (and their attempts) are kept this long for the deliveries log and replay. */
export const KEEP_FINISHED_MS = 7 * 86_400_000;
const PRUNE_EVERY_MS = 3_600_000;
/**
 * A claim's lease: twice an attempt's timeout and a second (21 s by default), room for the
 * recording after the attempt and for the nodes' clocks to differ a little. A node that dies
 * mid-attempt holds its messages' endpoints this long.
 */
export const leaseMs = (timeoutMs: number): number => 2 * timeoutMs + 1000;

/**
 * `p`, or a rejection once `ms` have passed: a round or an attempt that never settles (a database
 * connection cut mid-query) must not hold the dispatcher or its endpoint forever. What it held is
 * safe to take again: its message's lease has run out by then.
 */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms; abandoned`)), ms);
    timer.unref();
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

export interface WebhookStats {
  deliveries: [string, number][];
  pending: number;
  oldestPendingSeconds: number;
}

export class WebhookDispatcher {
  private readonly busy = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private poll: NodeJS.Timeout | null = null;
  private running = false;
  private again = false;
  private stopped = false;
  private failing = false;
  private lastPrune = 0;
  private unlisten: (() => void) | null = null;
  readonly counts = new Map<DeliveryResult, number>(DELIVERY_RESULTS.map((r) => [r, 0]));

  constructor(
    private readonly rt: ActorRuntime,
    private readonly resolve?: Resolve,
  ) {}

  private get settings() {
    return this.rt.config.webhooks;
  }

  private get policy(): RetryPolicy {
    const s = this.settings;
    return { baseMs: s.retryBaseMs, maxMs: s.retryMaxMs, retryForMs: s.retryForMs };
  }

  start(): void {
    this.unlisten = onQueued(() => this.run());
    this.poll = setInterval(() => this.run(), this.settings.pollMs);
    this.poll.unref();
    this.run();
  }

  stop(): void {
    this.stopped = true;
    this.unlisten?.();
    if (this.poll !== null) clearInterval(this.poll);
    if (this.timer !== null) clearTimeout(this.timer);
  }

  async stats(): Promise<WebhookStats> {
    const { pending, oldestSeconds } = await store.pendingStats(this.rt.db, new Date(this.rt.now()));
    return { deliveries: [...this.counts], pending, oldestPendingSeconds: oldestSeconds };
  }

  /** One claim round at a time; a call during a round asks for another after it. */
  private run(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    void within(this.round(), leaseMs(this.settings.timeoutMs), 'a webhook claim round')
      .then(() => {
        this.failing = false;
      })
      .catch((err) => {
        if (!this.failing) this.rt.log.warn('webhook dispatch failed; trying again at the next poll', { err: err as Error });
        this.failing = true;
      })
      .finally(() => {
        this.running = false;
        if (this.again) {
          this.again = false;
          this.run();
        }
      });
  }

  private async round(): Promise<void> {
    const now = new Date(this.rt.now());
    if (now.getTime() - this.lastPrune > PRUNE_EVERY_MS) {
      this.lastPrune = now.getTime();
      await store.pruneFinished(this.rt.db, new Date(now.getTime() - KEEP_FINISHED_MS));
    }
    const free = this.settings.concurrency - this.busy.size;
    if (free > 0) {
      const claimed = await this.rt.db.transaction((tx) =>
        store.claimDue(tx, now, leaseMs(this.settings.timeoutMs), free, randomUUID(), [...this.busy]),
      );
      for (const c of claimed) {
        this.busy.add(c.endpoint.id);
        void within(this.attempt(c), leaseMs(this.settings.timeoutMs), 'a webhook attempt')
          .catch((err) => this.rt.log.warn('recording a webhook attempt failed; it will be made again', { messageId: c.msgId, err: err as Error }))
          .finally(() => {
            this.busy.delete(c.endpoint.id);
            this.run();
          });
      }
    }
    const ms = await store.msToNextDue(this.rt.db, new Date(this.rt.now()));
    this.arm(ms === null ? null : Math.max(ms, 0) + 5);
  }

  private arm(ms: number | null): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (ms === null || this.stopped || ms >= this.settings.pollMs) return;
    this.timer = setTimeout(() => this.run(), ms);
    this.timer.unref();
  }

  /** The message's body: frozen at its first attempt, so every attempt sends the same bytes. */
  private async bodyOf(c: store.Claimed): Promise<string | null> {
    if (c.body !== null) return c.body;
    if (c.auditEventId === null) return null;
    const event = await eventById(this.rt.db, c.auditEventId);
    if (event === null) return null;
    const body = JSON.stringify({ type: c.type, timestamp: event.at, organization: c.orgName, data: event });
    await store.setBody(this.rt.db, c.id, body);
    return body;
  }

  private async attempt(c: store.Claimed): Promise<void> {
    const body = await this.bodyOf(c);
    const at = new Date(this.rt.now());
    const cluster = this.rt.config.clusterSecret;
    const secrets = [openSecret(c.endpoint.secret, cluster)];
    if (c.endpoint.previousSecret !== null && c.endpoint.previousUntil !== null && c.endpoint.previousUntil > at.getTime()) {
      secrets.push(openSecret(c.endpoint.previousSecret, cluster));
    }
    let result: SendResult;
    if (body === null) {
      result = { status: null, error: 'the audit event of this message no longer exists', retryAfter: null, durationMs: 0, responseBytes: 0 };
    } else if (secrets.some((s) => s === null)) {
      result = { status: null, error: 'the signing secret cannot be read (VEXIL_CLUSTER_SECRET changed or unset?)', retryAfter: null, durationMs: 0, responseBytes: 0 };
    } else {
      result = await send({
        url: c.endpoint.url,
        headers: webhookHeaders(secrets as string[], c.msgId, at.getTime(), body),
        body,
        timeoutMs: this.settings.timeoutMs,
        allowPrivate: this.settings.allowPrivate,
        ...(this.resolve ? { resolve: this.resolve } : {}),
      });
    }
    const now = this.rt.now();
    const decision =
      body === null
        ? ({ kind: 'give-up' } as const)
        : decide({ status: result.status, retryAfterMs: parseRetryAfter(result.retryAfter, now) }, c.attempt, c.createdAt, now, this.policy, Math.random());
    const finish: store.Finish =
      decision.kind === 'delivered' ? { kind: 'delivered' } : decision.kind === 'retry' ? { kind: 'retry', at: new Date(decision.at) } : { kind: 'failed' };
    const error = decision.kind === 'give-up' && result.error !== null ? `${result.error}; given up` : result.error;
    const recorded = await this.rt.db.transaction(async (tx) => {
      if (decision.kind === 'disable') await store.disableEndpoint(tx, c.endpoint.id, `410 Gone at ${new Date(now).toISOString()}`);
      return store.recordAttempt(tx, c, at, { status: result.status, durationMs: result.durationMs, error }, finish);
    });
    if (!recorded) return;
    const counted: DeliveryResult = decision.kind === 'delivered' ? 'success' : decision.kind === 'retry' ? 'retry' : decision.kind === 'disable' ? 'disabled' : 'gave_up';
    this.counts.set(counted, (this.counts.get(counted) ?? 0) + 1);
    if (decision.kind === 'disable') this.rt.log.warn('webhook endpoint answered 410 Gone: disabled', { endpointId: c.endpoint.id, orgId: c.orgId });
    if (decision.kind === 'give-up') this.rt.log.warn('webhook message given up', { endpointId: c.endpoint.id, messageId: c.msgId, attempts: c.attempt });
  }
}
