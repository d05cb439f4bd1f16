/**
 * The cluster bus's wire format, and the only place a bus message is trusted or not
 * (docs/cluster.md, "Bus trust").
 *
 * A message is the JSON of `{node, ts, nonce, event}`. With `VEXIL_CLUSTER_SECRET` it carries
 * `Vexil-Signature: <hex HMAC-SHA256(secret, the exact payload bytes)>` as a NATS header, and a
 * receiver accepts it only when the signature matches, `ts` is within `WINDOW_MS` of its clock and
 * its `nonce` was not seen in that window (so a captured message cannot be replayed). Without a
 * secret nothing is authenticated: a message is still only a hint (registry.ts, membership.ts).
 *
 * Anything else is rejected with a reason, counted in `vexil_bus_rejected_total`, and dropped;
 * decoding never throws, so no message can stop the bus reader.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { ClusterEvent } from './bus.js';

export const SIGNATURE_HEADER = 'Vexil-Signature';
/** Larger payloads are dropped unread (a real message is a few hundred bytes). */
export const MAX_MESSAGE_BYTES = 16 * 1024;
/** How far a signed message's timestamp may be from the receiver's clock. */
export const WINDOW_MS = 30_000;

export const REJECT_REASONS = ['too_large', 'malformed', 'unsigned', 'bad_signature', 'expired', 'replayed'] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];

const id = z.string().min(1).max(128);
/** VEXIL_NODE_ID, or the default of hostname, pid and random hex (config.ts). */
const nodeId = z.string().min(1).max(256);
const touches = z.union([
  z.object({ flag: z.string().min(1).max(256) }).strict(),
  z.object({ segment: z.string().min(1).max(256) }).strict(),
  z.literal('settings'),
  z.literal('all'),
]);
/** Versions are PostgreSQL integers. */
const version = z.number().int().min(1).max(2_147_483_647);

const event = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('change'), change: z.object({ orgId: id, version, touches }).strict() }).strict(),
  z.object({ kind: z.literal('key'), orgId: id, keyId: id }).strict(),
  z.object({ kind: z.literal('heartbeat'), node: nodeId }).strict(),
]);

const envelope = z
  .object({ node: nodeId, ts: z.number().int().nonnegative(), nonce: z.string().regex(/^[0-9a-f]{32}$/), event })
  .strict()
  .refine((e) => e.event.kind !== 'heartbeat' || e.event.node === e.node, 'a heartbeat names its sender');

export interface Received {
  node: string;
  event: ClusterEvent;
}

export type Decoded = { ok: true; message: Received } | { ok: false; reason: RejectReason };

const sign = (secret: string, payload: Uint8Array): string => createHmac('sha256', secret).update(payload).digest('hex');

/** Nonces seen within the window (bounded: the oldest go first past `max`). */
class SeenNonces {
  private readonly seen = new Map<string, number>();
  constructor(private readonly max = 200_000) {}

  /** False when `nonce` was already seen; otherwise remembers it. */
  add(nonce: string, ts: number, now: number): boolean {
    for (const [n, at] of this.seen) {
      if (at >= now - WINDOW_MS && this.seen.size < this.max) break;
      this.seen.delete(n);
    }
    if (this.seen.has(nonce)) return false;
    this.seen.set(nonce, ts);
    return true;
  }
}

export class BusCodec {
  private readonly encoder = new TextEncoder();
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });
  private readonly nonces = new SeenNonces();

  constructor(
    private readonly nodeId: string,
    /** `VEXIL_CLUSTER_SECRET`, or null. */
    private readonly secret: string | null,
    private readonly now: () => number = Date.now,
  ) {}

  /** The payload of `event` from this node, and its signature header when a secret is set. */
  encode(event: ClusterEvent): { data: Uint8Array; signature: string | null } {
    const data = this.encoder.encode(JSON.stringify({ node: this.nodeId, ts: this.now(), nonce: randomBytes(16).toString('hex'), event }));
    return { data, signature: this.secret === null ? null : sign(this.secret, data) };
  }

  /** Checks a received payload (and its signature header, if any). Never throws. */
  decode(data: Uint8Array, signature: string | undefined): Decoded {
    if (data.byteLength > MAX_MESSAGE_BYTES) return { ok: false, reason: 'too_large' };
    if (this.secret !== null) {
      if (signature === undefined || signature === '') return { ok: false, reason: 'unsigned' };
      const expected = Buffer.from(sign(this.secret, data), 'hex');
      const got = Buffer.from(signature, 'hex');
      if (got.length !== expected.length || !timingSafeEqual(got, expected)) return { ok: false, reason: 'bad_signature' };
    }
    let parsed: z.infer<typeof envelope>;
    try {
      const result = envelope.safeParse(JSON.parse(this.decoder.decode(data)));
      if (!result.success) return { ok: false, reason: 'malformed' };
      parsed = result.data;
    } catch {
      return { ok: false, reason: 'malformed' };
    }
    if (this.secret !== null) {
      const now = this.now();
      if (Math.abs(now - parsed.ts) > WINDOW_MS) return { ok: false, reason: 'expired' };
      if (!this.nonces.add(parsed.nonce, parsed.ts, now)) return { ok: false, reason: 'replayed' };
    }
    return { ok: true, message: { node: parsed.node, event: parsed.event as ClusterEvent } };
  }
}
