/**
 * The per-key token buckets (token-bucket.ts) in one SharedArrayBuffer, so that every front thread
 * of a node (CONTRACT 20, VEXIL_FRONT_THREADS) takes from the same buckets: a limit holds whichever
 * thread serves a request, exactly. One thread runs the same code (admission-state.ts builds it
 * with `create`; another thread `attach`es to its `memory`).
 *
 * Layout (one SharedArrayBuffer, `capacity` slots, a power of two, in sets of WAYS = 16):
 *
 *   control   bytes 0-63: Int32 [nodes (the cluster share's divisor), insert lock]
 *   slots     64 bytes each (one cache line: a take touches one line of the table)
 *             Int32 [state: 0 empty, 1 evaluation bucket, 2 management bucket; lock: 0 free,
 *             1 held; the key id's 128-bit fingerprint (4 words); its form: 1 UUID bytes, 2 hash;
 *             -], then Float64 [tokens, updated ms], then padding
 *
 * Identity: a canonical UUID (what key ids are, randomUUID) is its own 16 bytes, so two keys
 * share a bucket only if they are the same UUID (hex digits read case-insensitively). Any other
 * string is fingerprinted by a 128-bit non-cryptographic hash (tests use short names); the form
 * word keeps the two spaces apart. Key ids come from the server, never from clients.
 *
 * Lookup (the hot path): the fingerprint and the kind pick a set; its slots are compared (state
 * and fingerprint) without locking until the key's slot or the set's first empty slot. The slot's
 * lock is taken with Atomics.compareExchange, the identity checked again under it, the bucket
 * refilled and charged, and the lock released with Atomics.store: take and charge are exact under
 * concurrency, and the lock's synchronizes-with order makes the plain Float64 reads and writes
 * inside it visible to the next holder. No allocation, no system call: the clock is the monotonic
 * performance.now() offset by this thread's timeOrigin, comparable across threads (a bucket's time
 * only moves forward, so a thread whose clock lags by a fraction of a millisecond refills nothing
 * rather than minting tokens).
 *
 * Inserts (a key's first request on this node) take one table-wide lock, under which the set is
 * searched again, so two threads never give one key two slots. A set fills in order and a slot is
 * never emptied, so the first empty slot ends a search. Bound: 64 + `capacity` × 64 bytes (default
 * 2^17 slots: 8 MiB, for up to 131,072 buckets; a key has up to two). When a key's set is full, the
 * key takes over a slot of the set whose bucket has refilled to a full burst (it carries no state:
 * the in-memory limiter before this one dropped full buckets the same way), under that slot's lock.
 * When none has (all 16 used within the last second, or in debt) the new key's request is refused
 * with Retry-After 1 and a charge of it is dropped: the set fails closed, for at most the time it
 * takes one of those buckets to refill.
 */
import { burst, refill, secondsUntilToken, type Bucket, type BucketKind, type Limiter } from './token-bucket.js';

/** What another thread needs to attach: structured-clonable (SharedArrayBuffer and numbers only). */
export interface LimiterMemory {
  buffer: SharedArrayBuffer;
  /** Slots (a power of two). */
  capacity: number;
  /** Configured rates per second for the whole cluster (divided by the node count in `control`). */
  eval: number;
  mgmt: number;
}

export interface LimiterOptions {
  /** Milliseconds, comparable across threads; injected by tests. */
  now?: () => number;
}

export const DEFAULT_CAPACITY = 1 << 17;

const CONTROL_INTS = 4;
const CONTROL_BYTES = 64; // the table starts on its own cache line
const NODES = 0;
const INSERT_LOCK = 1;

/** Slots per set: a key lives in one of the WAYS slots of the set its fingerprint picks. */
export const WAYS = 16;

const SLOT_BYTES = 64; // one cache line: a take touches one line of the table
const STRIDE = SLOT_BYTES / 4;
const VSTRIDE = SLOT_BYTES / 8;
/** Float64 indices inside a slot (bytes 32 and 40). */
const TOKENS = 4;
const UPDATED = 5;
const STATE = 0;
const LOCK = 1;
const FP = 2;
const FORM = 6;

const FORM_UUID = 1;
const FORM_HASH = 2;

const ORIGIN = performance.timeOrigin;
const wallMs = (): number => ORIGIN + performance.now();

/** Value of a hex digit by char code, else -1 (any code above 127 too). */
const HEX = new Int8Array(128).fill(-1);
for (let c = 0; c < 10; c++) HEX[48 + c] = c;
for (let c = 0; c < 6; c++) HEX[65 + c] = HEX[97 + c] = 10 + c;
const hexDigit = (c: number): number => HEX[c & 127] | ((127 - c) >> 31);

/** The 16-bit value of the 4 hex digits at `at`, or a negative number if one is not a hex digit. */
function hex4(s: string, at: number): number {
  const d0 = hexDigit(s.charCodeAt(at));
  const d1 = hexDigit(s.charCodeAt(at + 1));
  const d2 = hexDigit(s.charCodeAt(at + 2));
  const d3 = hexDigit(s.charCodeAt(at + 3));
  return (d0 | d1 | d2 | d3) < 0 ? -1 : (d0 << 12) | (d1 << 8) | (d2 << 4) | d3;
}

/** murmur3's finalizer: every input bit moves every output bit. */
function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/**
 * A lock word held by another thread. Its holder keeps it for a few dozen instructions, so spin;
 * if that is not enough, the holder was descheduled (more threads than cores), and spinning on
 * would burn the rest of this thread's time slice: sleep 50 µs at a time instead (Atomics.wait
 * with a timeout; unlocking never notifies, so the hot path stays one store).
 */
function lockSlow(words: Int32Array, i: number): void {
  for (let spins = 0; ; spins++) {
    if (Atomics.compareExchange(words, i, 0, 1) === 0) return;
    if (spins >= 200) Atomics.wait(words, i, 1, 0.05);
  }
}

/** A key id as this thread last found it (SharedRateLimiter's `known`). */
interface Known {
  f0: number;
  f1: number;
  f2: number;
  f3: number;
  form: number;
  slot: number;
}

/** Key ids a thread remembers per kind before it starts over. */
const KNOWN_MAX = 16_384;

export class SharedRateLimiter implements Limiter {
  private readonly control: Int32Array;
  private readonly meta: Int32Array;
  private readonly values: Float64Array;
  private readonly slots: number;
  private readonly setMask: number;
  private readonly configuredEval: number;
  private readonly configuredMgmt: number;
  private readonly now: () => number;
  /** The fingerprint of the key being looked up (fields, so the hot path allocates nothing). */
  private f0 = 0;
  private f1 = 0;
  private f2 = 0;
  private f3 = 0;
  private form = 0;
  private readonly scratch: Bucket = { tokens: 0, updatedMs: 0 };
  /**
   * This thread's memory of the keys it has seen, per kind: the fingerprint (so a UUID is parsed
   * once per thread, not per request: a Map lookup costs a third of reading 36 characters) and the
   * slot it had, a hint checked under the slot's lock. Bounded: cleared when full.
   */
  private readonly knownEval = new Map<string, Known>();
  private readonly knownMgmt = new Map<string, Known>();

  /** A new table for this node's front threads. */
  static create(configured: Record<BucketKind, number>, opts: LimiterOptions & { capacity?: number } = {}): SharedRateLimiter {
    const capacity = opts.capacity ?? DEFAULT_CAPACITY;
    if (!Number.isInteger(capacity) || capacity < WAYS || (capacity & (capacity - 1)) !== 0 || capacity > 1 << 24) {
      throw new RangeError(`rate limiter capacity must be a power of two from ${WAYS} to 2^24, not ${capacity}`);
    }
    for (const kind of ['eval', 'mgmt'] as const) {
      if (!(configured[kind] > 0) || !Number.isFinite(configured[kind])) throw new RangeError(`rate limit ${kind} must be a positive number, not ${configured[kind]}`);
    }
    const buffer = new SharedArrayBuffer(CONTROL_BYTES + capacity * SLOT_BYTES);
    new Int32Array(buffer, 0, CONTROL_INTS)[NODES] = 1;
    return new SharedRateLimiter({ buffer, capacity, eval: configured.eval, mgmt: configured.mgmt }, opts.now);
  }

  /** The same buckets as the thread that created `memory` (sent to this one by postMessage or workerData). */
  static attach(memory: LimiterMemory, opts: LimiterOptions = {}): SharedRateLimiter {
    return new SharedRateLimiter(memory, opts.now);
  }

  private constructor(
    readonly memory: LimiterMemory,
    now: (() => number) | undefined,
  ) {
    const { buffer, capacity } = memory;
    this.control = new Int32Array(buffer, 0, CONTROL_INTS);
    this.meta = new Int32Array(buffer, CONTROL_BYTES, capacity * STRIDE);
    this.values = new Float64Array(buffer, CONTROL_BYTES, capacity * VSTRIDE);
    this.slots = capacity;
    this.setMask = capacity / WAYS - 1;
    this.configuredEval = memory.eval;
    this.configuredMgmt = memory.mgmt;
    this.now = now ?? wallMs;
  }

  /**
   * Cluster share (docs/cluster.md): with `nodes` live nodes each enforces 1/nodes of every key's
   * budget, so together they never admit more than the configured rate (plus one second's burst).
   * One Atomics.store: every thread uses the new share from its next request. Stored bursts above
   * the new one are cut to it.
   */
  setNodes(nodes: number): void {
    const n = Number.isFinite(nodes) ? Math.max(1, Math.floor(nodes)) : 1;
    Atomics.store(this.control, NODES, n);
    const { meta, values } = this;
    for (let s = 0; s < this.slots; s++) {
      const m = s * STRIDE;
      const kind = Atomics.load(meta, m + STATE);
      if (kind === 0) continue;
      this.lock(m);
      const cap = burst(this.rate(Atomics.load(meta, m + STATE)));
      if (values[s * VSTRIDE + TOKENS] > cap) values[s * VSTRIDE + TOKENS] = cap;
      Atomics.store(meta, m + LOCK, 0);
    }
  }

  /** Takes one token. Returns 0 when allowed, otherwise the seconds to wait (for `Retry-After`). */
  take(kind: BucketKind, keyId: string): number {
    const k = kind === 'eval' ? 1 : 2;
    const nowMs = this.now();
    const s = this.acquire(k, keyId, nowMs);
    if (s < 0) return 1;
    const rate = this.rate(k);
    const b = this.load(s, nowMs, rate);
    let wait = 0;
    if (b.tokens >= 1) b.tokens -= 1;
    else wait = secondsUntilToken(b.tokens, rate);
    this.storeAndUnlock(s);
    return wait;
  }

  /**
   * Charges `n` tokens without refusing; the bucket may go negative by at most `maxDebt` (GraphQL:
   * every `evaluate` after the first, docs/graphql.md "Rate limiting"). Later requests wait until
   * it refills.
   */
  charge(kind: BucketKind, keyId: string, n: number, maxDebt: number): void {
    if (!(n > 0)) return;
    const k = kind === 'eval' ? 1 : 2;
    const nowMs = this.now();
    const s = this.acquire(k, keyId, nowMs);
    if (s < 0) return;
    const b = this.load(s, nowMs, this.rate(k));
    b.tokens = Math.max(-maxDebt, b.tokens - n);
    this.storeAndUnlock(s);
  }

  /** This node's rate for bucket kind `k` (1 evaluation, 2 management): configured / nodes. */
  private rate(k: number): number {
    return (k === 1 ? this.configuredEval : this.configuredMgmt) / Atomics.load(this.control, NODES);
  }

  /** The slot's bucket, refilled to `nowMs`, into `scratch` (the slot's lock is held). */
  private load(s: number, nowMs: number, rate: number): Bucket {
    const b = this.scratch;
    b.tokens = this.values[s * VSTRIDE + TOKENS];
    b.updatedMs = this.values[s * VSTRIDE + UPDATED];
    refill(b, nowMs, rate, burst(rate));
    return b;
  }

  private storeAndUnlock(s: number): void {
    this.values[s * VSTRIDE + TOKENS] = this.scratch.tokens;
    this.values[s * VSTRIDE + UPDATED] = this.scratch.updatedMs;
    Atomics.store(this.meta, s * STRIDE + LOCK, 0);
  }

  private lock(m: number): void {
    if (Atomics.compareExchange(this.meta, m + LOCK, 0, 1) !== 0) lockSlow(this.meta, m + LOCK);
  }

  /** The key's slot with its lock held, or -1 when its set has no room for it. */
  private acquire(k: number, keyId: string, nowMs: number): number {
    const known = k === 1 ? this.knownEval : this.knownMgmt;
    const hint = known.get(keyId);
    if (hint !== undefined) {
      const m = hint.slot * STRIDE;
      this.lock(m);
      const { meta } = this;
      if (meta[m + STATE] === k && meta[m + FP] === hint.f0 && meta[m + FP + 1] === hint.f1 && meta[m + FP + 2] === hint.f2 && meta[m + FP + 3] === hint.f3 && meta[m + FORM] === hint.form) {
        return hint.slot;
      }
      Atomics.store(meta, m + LOCK, 0); // the slot went to another key: look again
      this.f0 = hint.f0;
      this.f1 = hint.f1;
      this.f2 = hint.f2;
      this.f3 = hint.f3;
      this.form = hint.form;
    } else this.fingerprint(keyId);
    const s = this.find(k, nowMs);
    if (s >= 0) {
      if (hint !== undefined) hint.slot = s;
      else {
        if (known.size >= KNOWN_MAX) known.clear();
        known.set(keyId, { f0: this.f0, f1: this.f1, f2: this.f2, f3: this.f3, form: this.form, slot: s });
      }
    }
    return s;
  }

  /** The slot of the fingerprint in f0..f3/form, locked: found in its set, or placed there; or -1. */
  private find(k: number, nowMs: number): number {
    const { meta } = this;
    const first = this.set(k) * WAYS;
    for (let s = first; s < first + WAYS; s++) {
      const m = s * STRIDE;
      const state = Atomics.load(meta, m + STATE);
      if (state === 0) break; // a set fills in order and never empties: the key is not here
      if (state === k && this.matches(m)) {
        this.lock(m);
        // Taken over by another key between the look and the lock? Then the slow path decides.
        if (meta[m + STATE] === k && this.matches(m)) return s;
        Atomics.store(meta, m + LOCK, 0);
        break;
      }
    }
    return this.insert(k, first, nowMs);
  }

  /** Under the table-wide insert lock: the key's slot (found again, claimed, or taken over), locked; or -1. */
  private insert(k: number, first: number, nowMs: number): number {
    const { meta, control, values } = this;
    if (Atomics.compareExchange(control, INSERT_LOCK, 0, 1) !== 0) lockSlow(control, INSERT_LOCK);
    try {
      const rate = this.rate(k);
      for (let s = first; s < first + WAYS; s++) {
        const m = s * STRIDE;
        const state = Atomics.load(meta, m + STATE);
        if (state === 0) {
          meta[m + LOCK] = 1; // held by this thread from the moment the slot is visible
          this.writeIdentity(m, s, burst(rate), nowMs);
          Atomics.store(meta, m + STATE, k);
          return s;
        }
        // Identities change only under the insert lock, which this thread holds: stable reads.
        if (state === k && this.matches(m)) {
          this.lock(m);
          return s;
        }
      }
      // The set is full: a bucket that has refilled to its burst carries no state; take it over.
      for (let s = first; s < first + WAYS; s++) {
        const m = s * STRIDE;
        this.lock(m);
        const otherRate = this.rate(meta[m + STATE]);
        if (values[s * VSTRIDE + TOKENS] + (Math.max(0, nowMs - values[s * VSTRIDE + UPDATED]) * otherRate) / 1000 >= burst(otherRate)) {
          this.writeIdentity(m, s, burst(rate), nowMs);
          Atomics.store(meta, m + STATE, k);
          return s;
        }
        Atomics.store(meta, m + LOCK, 0);
      }
      return -1;
    } finally {
      Atomics.store(control, INSERT_LOCK, 0);
    }
  }

  private writeIdentity(m: number, s: number, tokens: number, nowMs: number): void {
    const { meta } = this;
    meta[m + FP] = this.f0;
    meta[m + FP + 1] = this.f1;
    meta[m + FP + 2] = this.f2;
    meta[m + FP + 3] = this.f3;
    meta[m + FORM] = this.form;
    this.values[s * VSTRIDE + TOKENS] = tokens;
    this.values[s * VSTRIDE + UPDATED] = nowMs;
  }

  private matches(m: number): boolean {
    const { meta } = this;
    return meta[m + FP] === this.f0 && meta[m + FP + 1] === this.f1 && meta[m + FP + 2] === this.f2 && meta[m + FP + 3] === this.f3 && meta[m + FORM] === this.form;
  }

  /** The key's set, from its fingerprint and the bucket kind. */
  private set(k: number): number {
    const h = this.f0 ^ Math.imul(this.f1, 0x9e3779b1) ^ Math.imul(this.f2, 0x85ebca6b) ^ Math.imul(this.f3, 0xc2b2ae35) ^ Math.imul(k, 0x27d4eb2f);
    return fmix(h) & this.setMask;
  }

  /** Sets f0..f3 and form: a canonical UUID's 16 bytes, else a 128-bit hash of the string. */
  private fingerprint(id: string): void {
    if (id.length === 36 && id.charCodeAt(8) === 45 && id.charCodeAt(13) === 45 && id.charCodeAt(18) === 45 && id.charCodeAt(23) === 45) {
      // Unrolled by group (8-4-4-4-12 hex digits); a non-hex character makes its group negative.
      const a = hex4(id, 0);
      const b = hex4(id, 4);
      const c = hex4(id, 9);
      const d = hex4(id, 14);
      const e = hex4(id, 19);
      const f = hex4(id, 24);
      const g = hex4(id, 28);
      const h = hex4(id, 32);
      if ((a | b | c | d | e | f | g | h) >= 0) {
        this.f0 = (a << 16) | b;
        this.f1 = (c << 16) | d;
        this.f2 = (e << 16) | f;
        this.f3 = (g << 16) | h;
        this.form = FORM_UUID;
        return;
      }
    }
    // Four lanes with different seeds and multipliers over the UTF-16 code units, then mixed.
    let a = 0x811c9dc5;
    let b = 0x01000193 ^ id.length;
    let c = 0x9e3779b9;
    let d = 0x7f4a7c15 ^ Math.imul(id.length, 0x632be5ab);
    for (let p = 0; p < id.length; p++) {
      const u = id.charCodeAt(p);
      a = Math.imul(a ^ u, 0x01000193);
      b = Math.imul(b ^ u, 0x5bd1e995) ^ (b >>> 15);
      c = Math.imul((c ^ u) + (c << 5), 0x85ebca6b);
      d = Math.imul(d + u, 0xc2b2ae35) ^ (d >>> 13);
    }
    this.f0 = fmix(a ^ Math.imul(d, 3));
    this.f1 = fmix(b ^ c);
    this.f2 = fmix(c + a);
    this.f3 = fmix(d ^ b);
    this.form = FORM_HASH;
  }
}
