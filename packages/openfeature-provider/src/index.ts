/**
 * `@vexil/openfeature-provider`: an OpenFeature server provider for Node.js that evaluates in
 * process (docs/feed.md, "Evaluating from the feed"; packages/openfeature-provider/README.md).
 * It loads `GET /sdk/v1/snapshot`, follows `GET /sdk/v1/stream` and answers every evaluation
 * from the data it holds with the server's own engine, the OpenFeature context and the reasons
 * mapped as OFREP maps them (docs/ofrep.md). All of that comes from the server's portable folder,
 * src/engine/ (pure, no I/O: test/unit/architecture/imports.test.ts), and from nowhere else in
 * the server; the build bundles it into the package (packages/openfeature-provider/build.mjs).
 */
import {
  ErrorCode,
  OpenFeatureEventEmitter,
  ProviderEvents,
  StandardResolutionReasons,
  type EvaluationContext,
  type JsonValue,
  type Provider,
  type ResolutionDetails,
} from '@openfeature/server-sdk';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { applyFeedChangeDecoded, decodeFeed, readFeedSnapshot, type FeedChange, type FeedSnapshot } from '../../../src/engine/feed-decode.js';
import { evaluateFlag, sameName, type CompiledFlag, type OrgSnapshot } from '../../../src/engine/index.js';
import { reasonOf } from '../../../src/engine/ofrep-answer.js';
import { evaluationContextOf, isPlainContext, readsReservedContext } from '../../../src/engine/openfeature-context.js';

export interface VexilProviderOptions {
  /** The node's base URL, e.g. `http://vexil:8080`. */
  url: string;
  /** A key with CanEvaluate for one application (sent as `X-API-Key`). */
  key: string;
  /** The stage to evaluate in (the key's environment scope when left out). */
  stage?: string;
  /** A file to keep the last data in, to start from when the node cannot be reached. */
  cacheFile?: string;
  /** Reconnection backoff: the first delay (250 ms) and the cap (30 s); each delay is jittered. */
  minReconnectDelayMs?: number;
  maxReconnectDelayMs?: number;
  /** How long a snapshot request may take (5 s). */
  requestTimeoutMs?: number;
  /** A stream that sends nothing for this long is reconnected (60 s; the node comments every 25 s). */
  idleTimeoutMs?: number;
  /**
   * How often the evaluation counts are sent to `POST /sdk/v1/metrics` (30 s; 0: never). They are
   * also sent at close. See "Evaluation counts" in the package README.
   */
  metricsIntervalMs?: number;
  /** The most distinct (flag, variant) counts held unsent (METRICS_MAX_ENTRIES, 10,000; lower for tests). */
  metricsMaxEntries?: number;
}

/**
 * The most distinct (flag, variant) counts held unsent (one report's worth): while the node cannot
 * be reached, counts of those keep adding up; evaluations of a new one past it are dropped and
 * counted in `metricsDropped`.
 */
export const METRICS_MAX_ENTRIES = 10_000;

/** Per compiled flag: its name, whether it reads reserved context properties, and its unsent counts by variant. */
interface FlagRecord {
  /** The flag's name, for the report (the record outlives a data change until it is harvested). */
  flag: string;
  reads: boolean;
  /**
   * The report's variant names by `Evaluation.index + 1`: '' (no variant served), then the compiled
   * flag's variant keys in its order (`CompiledFlag.variants`), which the engine's index numbers.
   */
  variants: string[];
  /** Unsent counts by `Evaluation.index + 1`, as long as `variants`. */
  counts: number[];
  dirty: boolean;
}

/** A record of `cf`, with every count at 0. */
function recordOf(snapshot: OrgSnapshot, cf: CompiledFlag): FlagRecord {
  const variants = ['', ...cf.variants.keys()];
  // Array.from: a packed array of small integers (`new Array(n).fill(0)` would be a holey one,
  // whose every read checks for a hole).
  return { flag: cf.flag.name, reads: readsReservedContext(snapshot, cf), variants, counts: Array.from(variants, () => 0), dirty: false };
}

export type FlagType = 'boolean' | 'string' | 'number' | 'object';

/** One event of a Server-Sent Events stream. */
interface SseEvent {
  event: string;
  data: string;
}

/**
 * The OpenFeature provider. Evaluation is synchronous work on the held data: it never waits on the
 * network and never throws (an error is an answer with an `errorCode` and the default value).
 */
export class VexilProvider implements Provider {
  readonly metadata = { name: 'vexil' } as const;
  readonly runsOn = 'server' as const;
  readonly events: OpenFeatureEventEmitter = new OpenFeatureEventEmitter();

  private readonly base: string;
  private readonly query: string;
  private held: FeedSnapshot | null = null;
  private snapshot: OrgSnapshot | null = null;
  /** The feed's application: flags of another application are parents only. */
  private application = '';
  private stage = '';
  private closed = false;
  private following = false;
  /** Whether the provider has told the SDK it is not current (STALE or ERROR). */
  private notCurrent = false;
  private attempt = 0;
  private lastGap = 0;
  private stream: AbortController | null = null;
  private sleepTimer: ReturnType<typeof setTimeout> | null = null;
  private wake: (() => void) | null = null;
  private cacheWriting: Promise<void> | null = null;
  private cacheDirty = false;
  /**
   * Per flag of the held data, whether its evaluation can read a reserved context property
   * (`readsReservedContext`); filled as flags are evaluated, emptied when the data changes. When
   * not, the engine reads the OpenFeature context as it is instead of a copy without those.
   */
  private reservedReaders = new Map<CompiledFlag, FlagRecord>();
  /** Counts taken from the records, not yet sent: by flag and variant (`flag\u0000variant`). */
  private unsent = new Map<string, number>();
  /** When the first unsent evaluation happened (ms; 0: none). */
  private unsentSince = 0;
  /** Records with counts since the last harvest. */
  private dirtyRecords: FlagRecord[] = [];
  private metricsTimer: ReturnType<typeof setInterval> | null = null;
  private sending: Promise<void> | null = null;
  /** Evaluations whose counts were dropped (more than METRICS_MAX_ENTRIES distinct unsent (flag, variant)). */
  metricsDropped = 0;
  /** Evaluations whose counts the node has accepted. */
  metricsSent = 0;

  /** Whether evaluations are counted (metricsIntervalMs > 0). */
  private readonly counting: boolean;

  constructor(private readonly options: VexilProviderOptions) {
    this.counting = (options.metricsIntervalMs ?? 30_000) > 0;
    this.base = options.url.replace(/\/+$/, '');
    this.query = options.stage === undefined ? '' : `?stage=${encodeURIComponent(options.stage)}`;
  }

  private startMetrics(): void {
    const every = this.options.metricsIntervalMs ?? 30_000;
    if (!this.counting || this.metricsTimer !== null) return;
    this.metricsTimer = setInterval(() => void this.sendMetrics(), every);
    (this.metricsTimer as { unref?: () => void }).unref?.();
  }

  /** Loads the snapshot (or, when the node cannot be reached, the cache file: STALE), then follows the stream. */
  async initialize(): Promise<void> {
    this.closed = false;
    this.startMetrics();
    try {
      this.take(await this.getSnapshot());
    } catch (err) {
      const cached = await this.readCache();
      this.follow();
      if (cached === null) {
        this.notCurrent = true;
        throw new Error(`Vexil: cannot load the feed from ${this.base}: ${messageOf(err)}`);
      }
      this.take(cached);
      this.notCurrent = true;
      // The SDK marks the provider READY once this resolves; STALE must come after that.
      setTimeout(() => {
        if (this.notCurrent && !this.closed) this.events.emit(ProviderEvents.Stale, { message: `Vexil: ${this.base} unreachable, answering from ${this.options.cacheFile}` });
      }, 0);
      return;
    }
    this.follow();
  }

  async onClose(): Promise<void> {
    this.closed = true;
    this.stream?.abort();
    this.wake?.();
    if (this.metricsTimer !== null) clearInterval(this.metricsTimer);
    this.metricsTimer = null;
    // The last counts (bounded by requestTimeoutMs; unsent ones are dropped with the provider).
    if (this.counting) {
      await this.sending;
      await this.sendMetrics();
      // What the node did not take now is lost with the provider: counted as dropped.
      this.harvest();
      for (const n of this.unsent.values()) this.metricsDropped += n;
      this.unsent = new Map();
    }
    await this.cacheWriting;
  }

  // ---- evaluation counts (POST /sdk/v1/metrics) ---------------------------------------------------

  /**
   * One evaluation of `rec`'s flag that served the variant at `index` (`Evaluation.index`: -1 for
   * none): one indexed increment, no comparison of keys (a scan of them mispredicts with a 50/50
   * split; docs/insights.md, "The provider row").
   */
  private countEvaluation(rec: FlagRecord, index: number, now: number): void {
    rec.counts[index + 1]++;
    if (!rec.dirty) {
      rec.dirty = true;
      this.dirtyRecords.push(rec);
      if (this.unsentSince === 0) this.unsentSince = now;
    }
  }

  /** Moves the records' counts into `unsent` (bounded), zeroing them. */
  private harvest(): void {
    const records = this.dirtyRecords;
    this.dirtyRecords = [];
    for (const rec of records) {
      rec.dirty = false;
      const flag = rec.flag;
      for (let i = 0; i < rec.variants.length; i++) {
        const n = rec.counts[i];
        if (n === 0) continue;
        rec.counts[i] = 0;
        this.addUnsent(`${flag}\u0000${rec.variants[i]}`, n);
      }
    }
  }

  private addUnsent(key: string, n: number): void {
    const had = this.unsent.get(key);
    if (had !== undefined) this.unsent.set(key, had + n);
    else if (this.unsent.size < Math.min(METRICS_MAX_ENTRIES, this.options.metricsMaxEntries ?? METRICS_MAX_ENTRIES)) this.unsent.set(key, n);
    else this.metricsDropped += n;
  }

  /**
   * Sends the unsent counts (one report at a time; never on an evaluation's path). When the node
   * cannot be reached or refuses, they are kept (within METRICS_MAX_ENTRIES) for the next time.
   */
  sendMetrics(): Promise<void> {
    if (this.sending !== null) return this.sending;
    this.harvest();
    if (this.unsent.size === 0) return Promise.resolve();
    const counts = this.unsent;
    const start = new Date(this.unsentSince === 0 ? Date.now() : this.unsentSince).toISOString();
    this.unsent = new Map();
    this.unsentSince = 0;
    const body = {
      start,
      end: new Date().toISOString(),
      counts: [...counts].map(([k, count]) => {
        const nul = k.indexOf('\u0000');
        return { flag: k.slice(0, nul), variant: k.slice(nul + 1), count };
      }),
    };
    const send = async () => {
      try {
        const res = await fetch(`${this.base}/sdk/v1/metrics${this.query}`, {
          method: 'POST',
          headers: { ...this.headers(), 'content-type': 'application/json' },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(this.options.requestTimeoutMs ?? 5000),
        });
        await res.body?.cancel();
        // 4xx other than 429 will not get better by sending again: dropped (and counted).
        if (res.status === 202) this.metricsSent += body.counts.reduce((s, c) => s + c.count, 0);
        else if (res.status >= 400 && res.status < 500 && res.status !== 429) this.metricsDropped += body.counts.reduce((s, c) => s + c.count, 0);
        else throw new Error(`HTTP ${res.status}`);
      } catch {
        if (this.unsentSince === 0 || Date.parse(start) < this.unsentSince) this.unsentSince = Date.parse(start);
        for (const [k, n] of counts) this.addUnsent(k, n);
      } finally {
        this.sending = null;
      }
    };
    this.sending = send();
    return this.sending;
  }

  resolveBooleanEvaluation(flagKey: string, defaultValue: boolean, context: EvaluationContext): Promise<ResolutionDetails<boolean>> {
    return Promise.resolve(this.resolve(flagKey, defaultValue, context, 'boolean'));
  }

  resolveStringEvaluation(flagKey: string, defaultValue: string, context: EvaluationContext): Promise<ResolutionDetails<string>> {
    return Promise.resolve(this.resolve(flagKey, defaultValue, context, 'string'));
  }

  resolveNumberEvaluation(flagKey: string, defaultValue: number, context: EvaluationContext): Promise<ResolutionDetails<number>> {
    return Promise.resolve(this.resolve(flagKey, defaultValue, context, 'number'));
  }

  resolveObjectEvaluation<T extends JsonValue>(flagKey: string, defaultValue: T, context: EvaluationContext): Promise<ResolutionDetails<T>> {
    return Promise.resolve(this.resolve(flagKey, defaultValue, context, 'object'));
  }

  /** The data version held (null before any data). */
  get version(): number | null {
    return this.held?.version ?? null;
  }

  /**
   * One evaluation, synchronously, from the held data: what `POST /flags/{name}` answers for the
   * same data (value, variant, reason as OFREP maps it, `flagMetadata.reasonCode`).
   */
  resolve<T>(flagKey: string, defaultValue: T, context: EvaluationContext, type: FlagType): ResolutionDetails<T> {
    try {
      const snapshot = this.snapshot;
      if (snapshot === null) return failed(defaultValue, ErrorCode.PROVIDER_NOT_READY, 'Vexil: no flag data yet');
      const cf = snapshot.flags.get(flagKey);
      if (cf === undefined || !sameName(cf.flag.project, this.application)) {
        return failed(defaultValue, ErrorCode.FLAG_NOT_FOUND, `Flag '${flagKey}' was not found`);
      }
      const userId = context.targetingKey;
      if (userId === undefined || userId === '') return failed(defaultValue, ErrorCode.TARGETING_KEY_MISSING, 'targetingKey is required (it is the userId)');
      if (typeof userId !== 'string') return failed(defaultValue, ErrorCode.INVALID_CONTEXT, 'targetingKey: expected a string');
      const clientId = context.clientId ?? null;
      if (clientId !== null && (typeof clientId !== 'string' || clientId === '')) {
        return failed(defaultValue, ErrorCode.INVALID_CONTEXT, 'clientId: expected a non-empty string or null');
      }
      const stage = this.stage;
      let rec = this.reservedReaders.get(cf);
      if (rec === undefined) {
        rec = recordOf(snapshot, cf);
        this.reservedReaders.set(cf, rec);
      }
      const evalContext = !rec.reads && isPlainContext(context) ? context : evaluationContextOf(context);
      const now = Date.now();
      const ev = evaluateFlag(snapshot, cf, { userId, stage, clientId, context: evalContext }, now);
      // Counted in memory (one indexed increment); sent later, off this path (sendMetrics).
      if (this.counting) this.countEvaluation(rec, ev.index, now);
      const flagMetadata = metadataOf(ev.reason.code);
      const reason = reasonOf(ev, cf, stage, clientId);
      // An outcome without a variant: the code default, as OFREP leaves `value` out.
      if (ev.key === null) return { value: defaultValue, reason, flagMetadata };
      const value = ev.variant;
      if (!(type === 'object' ? typeof value === 'object' && value !== null : typeof value === type)) {
        return { ...failed(defaultValue, ErrorCode.TYPE_MISMATCH, `Flag '${flagKey}' is not a ${type}`), flagMetadata };
      }
      return { value: value as T, variant: ev.key, reason, flagMetadata };
    } catch (err) {
      return failed(defaultValue, ErrorCode.GENERAL, `Vexil: ${messageOf(err)}`);
    }
  }

  // ---- data -------------------------------------------------------------------------------------

  /** Holds a whole body (a snapshot, the cache, a stream's `snapshot` event); says which flags changed. */
  private take(json: unknown): void {
    const feed = readFeedSnapshot(json);
    const before = this.held;
    if (before !== null && before.version === feed.version) return;
    this.hold(feed, decodeFeed(feed));
    if (before !== null) {
      const flagsChanged = changedFlags(before, feed);
      if (flagsChanged.length > 0 || JSON.stringify(before.organization) !== JSON.stringify(feed.organization)) {
        this.events.emit(ProviderEvents.ConfigurationChanged, { flagsChanged });
      }
    }
  }

  /** Applies a `change` event; false on a gap (the caller reloads). */
  private change(json: unknown): boolean {
    const held = this.held!;
    const next = applyFeedChangeDecoded({ feed: held, snapshot: this.snapshot! }, json);
    if (next === null) return false;
    const c = json as FeedChange;
    this.hold(next.feed, next.snapshot);
    // An organization or segment change can alter any flag's answer.
    const names =
      c.organization !== undefined || c.segments !== undefined || c.removedSegments !== undefined
        ? [...new Set([...held.flags, ...next.feed.flags].map((f) => f.flag.name))]
        : [...(c.flags ?? []).map((f) => f.flag.name), ...(c.removedFlags ?? [])];
    this.events.emit(ProviderEvents.ConfigurationChanged, { flagsChanged: names });
    return true;
  }

  private hold(feed: FeedSnapshot, snapshot: OrgSnapshot): void {
    this.held = feed;
    this.snapshot = snapshot;
    // The counts of the old data's records first (the new data has new records).
    this.harvest();
    this.reservedReaders = new Map();
    this.application = feed.application;
    this.stage = feed.stage;
    this.writeCache();
  }

  // ---- network ----------------------------------------------------------------------------------

  private headers(): Record<string, string> {
    return { 'x-api-key': this.options.key };
  }

  private async getSnapshot(): Promise<unknown> {
    const res = await fetch(`${this.base}/sdk/v1/snapshot${this.query}`, {
      headers: this.headers(),
      signal: AbortSignal.timeout(this.options.requestTimeoutMs ?? 5000),
    });
    if (res.status !== 200) {
      await res.body?.cancel();
      throw new Error(`GET /sdk/v1/snapshot: HTTP ${res.status}`);
    }
    return res.json();
  }

  /** Follows the stream until closed: reconnects with jittered, capped backoff; reloads at once on a gap. */
  private async follow(): Promise<void> {
    if (this.following) return;
    this.following = true;
    while (!this.closed) {
      let gap = false;
      try {
        gap = await this.readStream();
      } catch {
        // A refused connection, an HTTP error, a dropped or idle stream: reconnect below.
      }
      if (this.closed) break;
      // A gap reloads at once, unless the last one was under a second ago (then with backoff).
      if (gap && Date.now() - this.lastGap > 1000) {
        this.lastGap = Date.now();
        continue;
      }
      if (!this.notCurrent && this.held !== null) {
        this.notCurrent = true;
        this.events.emit(ProviderEvents.Stale, { message: `Vexil: lost the stream from ${this.base}; reconnecting` });
      }
      await this.sleep(this.backoff());
    }
    this.following = false;
  }

  /** The next reconnection delay: exponential from the minimum, capped, with full jitter on its upper half. */
  private backoff(): number {
    const min = this.options.minReconnectDelayMs ?? 250;
    const max = this.options.maxReconnectDelayMs ?? 30_000;
    const d = Math.min(max, min * 2 ** Math.min(this.attempt++, 20));
    return d / 2 + Math.random() * (d / 2);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.wake = () => {
        if (this.sleepTimer !== null) clearTimeout(this.sleepTimer);
        this.wake = null;
        resolve();
      };
      this.sleepTimer = setTimeout(this.wake, ms);
    });
  }

  /** One stream connection; resolves true on a gap, false when the stream ends. */
  private async readStream(): Promise<boolean> {
    const ac = new AbortController();
    this.stream = ac;
    const idleMs = this.options.idleTimeoutMs ?? 60_000;
    let idle = setTimeout(() => ac.abort(), idleMs);
    try {
      const res = await fetch(`${this.base}/sdk/v1/stream${this.query}`, { headers: { ...this.headers(), accept: 'text/event-stream' }, signal: ac.signal });
      if (res.status !== 200 || res.body === null) {
        await res.body?.cancel();
        if (res.status === 401 || res.status === 403) this.events.emit(ProviderEvents.Error, { message: `Vexil: the stream answered HTTP ${res.status}` });
        throw new Error(`GET /sdk/v1/stream: HTTP ${res.status}`);
      }
      for await (const ev of sseEvents(res.body, () => {
        clearTimeout(idle);
        idle = setTimeout(() => ac.abort(), idleMs);
      })) {
        if (this.closed) return false;
        if (ev.event === 'snapshot') {
          // A snapshot of the version held (the usual first event) is not parsed again.
          if (versionOf(ev.data) !== this.held?.version) this.take(JSON.parse(ev.data));
          this.attempt = 0;
          if (this.notCurrent) {
            this.notCurrent = false;
            this.events.emit(ProviderEvents.Ready, { message: `Vexil: following ${this.base}` });
          }
        } else if (ev.event === 'change' && this.held !== null) {
          if (!this.change(JSON.parse(ev.data))) return true;
        }
      }
      return false;
    } finally {
      clearTimeout(idle);
      ac.abort();
    }
  }

  // ---- cache file -------------------------------------------------------------------------------

  private async readCache(): Promise<unknown | null> {
    const file = this.options.cacheFile;
    if (file === undefined) return null;
    try {
      const json = JSON.parse(await readFile(file, 'utf8'));
      const feed = readFeedSnapshot(json);
      // Data of another stage is no answer for this one.
      const stage = this.options.stage;
      return stage === undefined || sameName(feed.stage, stage) ? json : null;
    } catch {
      return null;
    }
  }

  /** Writes the held data to the cache file (a temporary file renamed over it), one write at a time. */
  private writeCache(): void {
    const file = this.options.cacheFile;
    if (file === undefined) return;
    if (this.cacheWriting !== null) {
      this.cacheDirty = true;
      return;
    }
    const write = async () => {
      do {
        this.cacheDirty = false;
        const tmp = `${file}.${process.pid}.tmp`;
        try {
          await writeFile(tmp, JSON.stringify(this.held));
          await rename(tmp, file);
        } catch {
          // The cache is a convenience: a failed write leaves the previous file.
        }
      } while (this.cacheDirty && !this.closed);
      this.cacheWriting = null;
    };
    this.cacheWriting = write();
  }
}

/** The `version` at the head of a snapshot body (`{"format":1,"version":N,…`, docs/feed.md), or null. */
function versionOf(data: string): number | null {
  const m = /^\{"format":1,"version":(\d+),/.exec(data.slice(0, 48));
  return m === null ? null : Number(m[1]);
}

/** `flagMetadata` of each reason code: one frozen object per code, shared by every answer (the SDK freezes it anyway). */
const metadata = new Map<string, Readonly<{ reasonCode: string }>>();

function metadataOf(reasonCode: string): Readonly<{ reasonCode: string }> {
  let m = metadata.get(reasonCode);
  if (m === undefined) metadata.set(reasonCode, (m = Object.freeze({ reasonCode })));
  return m;
}

function failed<T>(value: T, errorCode: ErrorCode, errorMessage: string): ResolutionDetails<T> {
  return { value, reason: StandardResolutionReasons.ERROR, errorCode, errorMessage };
}

function messageOf(err: unknown): string {
  return err instanceof Error ? (err.cause instanceof Error ? `${err.message} (${err.cause.message})` : err.message) : String(err);
}

/** The names of the flags added, changed or removed between two bodies. */
function changedFlags(a: FeedSnapshot, b: FeedSnapshot): string[] {
  const old = new Map(a.flags.map((f) => [f.flag.name, JSON.stringify(f)]));
  const out: string[] = [];
  for (const f of b.flags) {
    if (old.get(f.flag.name) !== JSON.stringify(f)) out.push(f.flag.name);
    old.delete(f.flag.name);
  }
  return [...out, ...old.keys()];
}

/** The events of a Server-Sent Events body; `onData` is called on every chunk (comments included). */
async function* sseEvents(body: ReadableStream<Uint8Array>, onData: () => void): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let data: string[] = [];
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    onData();
    // Only the new text is searched for line ends: a snapshot event is one long line.
    let from = buffer.length;
    buffer += decoder.decode(chunk, { stream: true });
    let start = 0;
    let nl: number;
    while ((nl = buffer.indexOf('\n', from)) >= 0) {
      let line = buffer.slice(start, nl);
      start = from = nl + 1;
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        if (data.length > 0) yield { event: event || 'message', data: data.join('\n') };
        event = '';
        data = [];
      } else if (!line.startsWith(':')) {
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
      }
    }
    buffer = buffer.slice(start);
  }
}
