/**
 * Whether the database answers, for `/readyz`, without a query per probe: one `select 1` at most
 * every `ttlMs` (concurrent probes share it), bounded by `timeoutMs`. A probe that finds the
 * answer older than `ttlMs` waits for the fresh one, so a cut database shows within about
 * `ttlMs + timeoutMs` however often the load balancer asks.
 */
export class DbHealth {
  private checkedAt = -Infinity;
  private ok = true;
  private pending: Promise<boolean> | null = null;

  constructor(
    /** One cheap statement (the actor's `select 1`, mailbox.ts `FrontAsks.ping`). */
    private readonly ping: () => Promise<unknown>,
    private readonly ttlMs = 1000,
    private readonly timeoutMs = 1000,
    private readonly now: () => number = performance.now.bind(performance),
  ) {}

  /** True when the database answered a check that is at most `ttlMs` old. */
  answers(): boolean | Promise<boolean> {
    if (this.now() - this.checkedAt < this.ttlMs) return this.ok;
    this.pending ??= this.check().finally(() => {
      this.pending = null;
    });
    return this.pending;
  }

  private async check(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), this.timeoutMs);
    });
    const query = this.ping().then(
      () => true,
      () => false,
    );
    this.ok = await Promise.race([query, timeout]);
    clearTimeout(timer);
    this.checkedAt = this.now();
    return this.ok;
  }
}
