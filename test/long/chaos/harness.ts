/**
 * The chaos test's machinery (test/long/chaos/chaos.test.ts, docs/chaos.md): node processes that can be
 * killed, frozen and restarted on their own port; writes that retry with an Idempotency-Key until
 * their outcome is known; evaluation loops that record every answer; fault windows.
 */
import type { Sql } from 'postgres';
import { spawnNode, type NodeProcess, type ProcessExit } from '../../helpers/process.js';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export interface CallResult {
  /** 0: no answer (refused, reset, or timed out). */
  status: number;
  body: any;
  text: string;
  ms: number;
}

/** One HTTP request with a deadline; never throws. */
export async function call(
  base: string,
  method: string,
  path: string,
  opts: { key?: string; body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<CallResult> {
  const t0 = performance.now();
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key !== undefined) headers['x-management-key'] = opts.key;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] = 'application/json';
  }
  try {
    const res = await fetch(base + path, { method, headers, body, signal: AbortSignal.timeout(opts.timeoutMs ?? 5000) });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: res.status, body: parsed, text, ms: performance.now() - t0 };
  } catch (err) {
    return { status: 0, body: undefined, text: String((err as Error)?.cause ?? err), ms: performance.now() - t0 };
  }
}

export interface UnexpectedExit {
  node: string;
  exit: ProcessExit;
  at: number;
  stderrTail: string;
}

/** One Vexil node process on a fixed port, restartable there after a SIGKILL. */
export class ChaosNode {
  proc: NodeProcess | null = null;
  /** Set while the test itself is killing the process: its exit is expected. */
  private killing = false;
  restarts = 0;
  readonly url: string;

  constructor(
    readonly name: string,
    readonly port: number,
    private readonly env: Record<string, string>,
    private readonly onUnexpectedExit: (e: UnexpectedExit) => void,
    private readonly teardown: { teardown(fn: () => unknown): void },
  ) {
    this.url = `http://127.0.0.1:${port}`;
  }

  get running(): boolean {
    return this.proc !== null && this.proc.exit === null;
  }

  async start(): Promise<void> {
    let lastErr: unknown;
    // The port was just freed by a SIGKILL: a bind can still fail for a moment; try again.
    for (let attempt = 0; attempt < 10; attempt++) {
      try {
        const proc = await spawnNode(this.teardown, {
          env: { ...this.env, PORT: String(this.port), VEXIL_NODE_ID: this.name },
          stderrKeep: 20_000,
        });
        this.proc = proc;
        void proc.exited.then((exit) => {
          if (this.proc === proc && !this.killing) {
            this.onUnexpectedExit({ node: this.name, exit, at: Date.now(), stderrTail: proc.stderrTail().slice(-4000) });
          }
        });
        return;
      } catch (err) {
        lastErr = err;
        await sleep(300);
      }
    }
    throw lastErr;
  }

  async kill(): Promise<void> {
    if (this.proc === null) return;
    this.killing = true;
    try {
      await this.proc.kill('SIGKILL');
    } finally {
      this.killing = false;
    }
  }

  signal(sig: 'SIGSTOP' | 'SIGCONT'): void {
    this.proc?.child.kill(sig);
  }

  /** Waits until /readyz answers 200 (or `timeoutMs` passes); returns whether it did. */
  async ready(timeoutMs = 30_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if ((await call(this.url, 'GET', '/readyz', { timeoutMs: 1000 })).status === 200) return true;
      await sleep(50);
    }
    return false;
  }
}

// ---- writes ------------------------------------------------------------------------------------

export type WriteKind = 'create' | 'update' | 'config' | 'counter' | 'change';

/** How a write ended, as the client saw it. */
export type Outcome =
  | 'acked' // a 2xx answer (first or replayed)
  | 'committed' // 409: its Idempotency-Key record exists (so it committed) but the answer was lost
  | 'rejected' // a 4xx answer other than those: a definitive refusal
  | 'unknown'; // no definitive answer before the retry budget ran out

export interface Write {
  /** Unique: the Idempotency-Key, and the marker the write leaves in the data (description or rule id). */
  id: string;
  kind: WriteKind;
  flag: string;
  /** Order of the writes to one flag (one owner writes each flag, one write at a time). */
  seq: number;
  outcome?: Outcome;
  statuses: number[];
  attempts: number;
  ms: number;
  /** Date.now() of the first attempt. */
  startedAt?: number;
  lastText?: string;
  /** The last answer's parsed body. */
  lastBody?: any;
}

export interface WriteStats {
  byStatus: Map<number, number>;
  retries: number;
  replayed: number;
}

const RETRYABLE = new Set([0, 500, 502, 503, 504]);

/**
 * Sends one write until its outcome is known: 2xx (acked), a definitive 4xx (rejected), or a 409
 * whose record says it committed; on no answer, 5xx, or 409 "did not complete", again with the same
 * Idempotency-Key on the next node, for at most `budgetMs`.
 */
export async function sendWrite(
  w: Write,
  nodes: ChaosNode[],
  startAt: number,
  key: string,
  method: string,
  path: string,
  body: unknown,
  stats: WriteStats,
  budgetMs = 30_000,
): Promise<Write> {
  const began = Date.now();
  w.startedAt = began;
  let committedSeen = false;
  for (let attempt = 0; ; attempt++) {
    const node = nodes[(startAt + attempt) % nodes.length];
    const r = await call(node.url, method, path, { key, body, headers: { 'idempotency-key': w.id }, timeoutMs: 8000 });
    w.attempts++;
    w.statuses.push(r.status);
    w.lastText = r.text.slice(0, 300);
    w.lastBody = r.body;
    stats.byStatus.set(r.status, (stats.byStatus.get(r.status) ?? 0) + 1);
    if (attempt > 0) stats.retries++;
    if (r.status >= 200 && r.status < 300) {
      w.outcome = 'acked';
      break;
    }
    let retry = RETRYABLE.has(r.status);
    if (r.status === 409) {
      const detail = String(r.body?.detail ?? '');
      if (/still in progress/.test(detail)) {
        committedSeen = true; // the record is only visible once the write committed
        retry = true;
      } else if (/node stopped before recording the answer/.test(detail)) {
        // Committed once; its node died before recording the answer (src/management/idempotency.ts).
        w.outcome = 'committed';
        break;
      } else if (/did not complete; try again/.test(detail)) {
        retry = true;
      }
    }
    if (!retry) {
      w.outcome = 'rejected';
      break;
    }
    if (Date.now() - began > budgetMs) {
      w.outcome = committedSeen ? 'committed' : 'unknown';
      break;
    }
    await sleep(Math.min(1000, 100 * (attempt + 1)));
  }
  if (w.statuses.length > 1 && w.outcome === 'acked') stats.replayed++;
  w.ms = Date.now() - began;
  return w;
}

// ---- evaluation samples ------------------------------------------------------------------------

/** Every evaluation answer of one node: start/end times (ms since the run began) and success. */
export class Samples {
  readonly t0: number[] = [];
  readonly t1: number[] = [];
  readonly ok: boolean[] = [];
  readonly errors: string[] = [];
  add(t0: number, t1: number, ok: boolean, error?: string) {
    this.t0.push(t0);
    this.t1.push(t1);
    this.ok.push(ok);
    if (!ok && error !== undefined && this.errors.length < 50) this.errors.push(error);
  }
}

export interface Window {
  node: string;
  kind: string;
  start: number;
  end: number;
}

/**
 * Availability of one node: answers whose request overlapped one of the node's own fault windows
 * are counted apart (`faulted`) from the rest (`clear`).
 */
export function availability(samples: Samples, windows: Window[]) {
  const own = windows.filter((w) => w.node !== '').sort((a, b) => a.start - b.start);
  const clear = { total: 0, ok: 0 };
  const faulted = { total: 0, ok: 0 };
  const clearFailures: { t0: number; t1: number }[] = [];
  for (let i = 0; i < samples.t0.length; i++) {
    const a = samples.t0[i];
    const b = samples.t1[i];
    const inFault = own.some((w) => a <= w.end && b >= w.start);
    const bucket = inFault ? faulted : clear;
    bucket.total++;
    if (samples.ok[i]) bucket.ok++;
    else if (!inFault) clearFailures.push({ t0: a, t1: b });
  }
  return { clear, faulted, clearFailures };
}

export const pct = (ok: number, total: number) => (total === 0 ? 100 : (100 * ok) / total);

// ---- change requests under faults (CONTRACT 17, docs/chaos.md) ------------------------------------

/** One round of the change-request loop, as the client saw it. */
export interface ChangeRound {
  marker: string;
  id: string | null;
  create: Outcome | undefined;
  review: Outcome | undefined;
  apply: Outcome | undefined;
  statuses: string;
}

/**
 * Change requests created, approved and applied during the faults: each round proposes one request
 * that sets the development configuration of every one of `CR_FLAGS` to a rule whose id is the
 * round's marker, approves it with another key (development requires one approval), and applies
 * it, each step retried with an Idempotency-Key through `sendWrite`. `check` then reads the
 * database: every apply is all or nothing (all its targets' changes recorded, or none), every
 * request's bases saw its targets at one state, acknowledged applies are applied, and the targets
 * hold the last applied request's after-state.
 */
export class ChangeRequestLoop {
  static readonly FLAGS = ['cr-t0', 'cr-t1', 'cr-t2'];
  static readonly STAGE = 'development';
  readonly rounds: ChangeRound[] = [];
  private stopped = false;
  private done: Promise<void> = Promise.resolve();

  private constructor(
    private readonly nodes: ChaosNode[],
    private readonly adminKey: string,
    private readonly approverKey: string,
    private readonly stats: WriteStats,
  ) {}

  /** The fixtures (before the run): the flags with a development configuration, an approver key, development protected. */
  static async setup(nodes: ChaosNode[], adminKey: string): Promise<ChangeRequestLoop> {
    const url = nodes[0].url;
    const must = async (r: Promise<CallResult>, status: number, what: string): Promise<CallResult> => {
      const res = await r;
      if (res.status !== status) throw new Error(`change-request fixtures: ${what}: ${res.status} ${res.text.slice(0, 300)}`);
      return res;
    };
    for (const f of ChangeRequestLoop.FLAGS) {
      await must(call(url, 'POST', '/api/flags', { key: adminKey, body: { name: f, project: 'default', type: 'boolean', variants: [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'off', value: false, valueType: 'boolean' }] } }), 201, `flag ${f}`);
      await must(call(url, 'POST', `/api/flags/${f}/configs`, { key: adminKey, body: ChangeRequestLoop.config('cr-init') }), 200, `${f} configuration`);
    }
    const approver = await must(call(url, 'POST', '/api/keys', { key: adminKey, body: { name: 'chaos-approver', permissions: ['CanApprove'] } }), 201, 'approver key');
    await must(call(url, 'PUT', `/api/environments/${ChangeRequestLoop.STAGE}/policy`, { key: adminKey, body: { requiredApprovals: 1 } }), 200, 'policy');
    return new ChangeRequestLoop(nodes, adminKey, approver.body.key as string, { byStatus: new Map(), retries: 0, replayed: 0 });
  }

  private static config(marker: string) {
    return { stage: ChangeRequestLoop.STAGE, enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100, rules: [{ id: marker, priority: 1, conditions: [], allocations: [{ variantKey: 'on', percentage: 100 }] }] };
  }

  /** Starts the rounds, one after another, `pauseMs` apart, until `stop`. */
  start(pauseMs = 500): void {
    this.done = (async () => {
      let rr = 0;
      for (let r = 0; !this.stopped; r++) {
        await this.round(`cr${r}`, rr);
        rr += 3;
        await sleep(pauseMs);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
  }

  private async round(marker: string, rr: number): Promise<void> {
    const step = (name: string): Write => ({ id: `${marker}-${name}`, kind: 'change', flag: '', seq: 0, statuses: [], attempts: 0, ms: 0 });
    const round: ChangeRound = { marker, id: null, create: undefined, review: undefined, apply: undefined, statuses: '' };
    this.rounds.push(round);
    const changes = ChangeRequestLoop.FLAGS.map((flag) => ({ op: 'upsertConfig', flag, input: ChangeRequestLoop.config(marker) }));
    const create = step('create');
    await sendWrite(create, this.nodes, rr, this.adminKey, 'POST', '/api/change-requests', { title: marker, changes }, this.stats);
    round.create = create.outcome;
    const steps = [create];
    try {
      if (create.outcome !== 'acked') return;
      const cr = (create.lastBody ?? {}) as { id?: string; hash?: string };
      if (cr.id === undefined || cr.hash === undefined) return;
      round.id = cr.id;
      const review = step('review');
      steps.push(review);
      await sendWrite(review, this.nodes, rr + 1, this.approverKey, 'POST', `/api/change-requests/${cr.id}/reviews`, { decision: 'approve', hash: cr.hash }, this.stats);
      round.review = review.outcome;
      if (review.outcome !== 'acked') return;
      const apply = step('apply');
      steps.push(apply);
      await sendWrite(apply, this.nodes, rr + 2, this.adminKey, 'POST', `/api/change-requests/${cr.id}/apply`, { hash: cr.hash }, this.stats);
      round.apply = apply.outcome;
    } finally {
      round.statuses = steps.map((s) => `${s.id.slice(marker.length + 1)} ${s.statuses.join(',')}`).join('; ');
    }
  }

  /**
   * Reads the database after the run. `accounted`: the audit event ids the loop explains (its
   * fixtures, every change.* event, every change an apply recorded).
   */
  async check(sql: Sql, orgId: string): Promise<{ problems: string[]; accounted: Set<number>; summary: string }> {
    const K = ChangeRequestLoop.FLAGS.length;
    const problems: string[] = [];
    const requests = await sql`select id, state, applied_version from change_requests where org_id = ${orgId} order by id`;
    const revisions = await sql`select r.request_id, r.bases::text as bases from change_request_revisions r join change_requests c on c.id = r.request_id and c.revision = r.revision where c.org_id = ${orgId}`;
    const events = await sql`select id, action, target_name, change_request_id from audit_events where org_id = ${orgId} and (change_request_id is not null or action like 'change.%' or action = 'org.policy' or target_name in ${sql(ChangeRequestLoop.FLAGS)}) order by id`;
    const configs = await sql`select flag_name, rules::text as rules from flag_configs where org_id = ${orgId} and stage = ${ChangeRequestLoop.STAGE} and client_id = ''`;
    const accounted = new Set<number>(events.map((e) => Number(e.id)));
    // Outside requests, only the fixtures of setup(): per target its creation and its first
    // configuration, and the one policy. Any other direct write on a target is not explained.
    const direct = events.filter((e) => e.change_request_id === null && !(e.action as string).startsWith('change.'));
    if (direct.filter((e) => e.action === 'org.policy').length !== 1 || direct.length !== 2 * K + 1)
      problems.push(`events outside change requests on the targets: ${direct.map((e) => `${e.action} ${e.target_name}`).join(', ')} (want ${K} flag.create, ${K} configuration writes and 1 org.policy)`);
    const basesOf = new Map<string, Record<string, { rules?: { id: string }[] } | null>>(revisions.map((r) => [r.request_id as string, JSON.parse(r.bases as string)]));
    const state = new Map<string, string>(requests.map((r) => [r.id as string, r.state as string]));
    for (const req of requests) {
      const id = req.id as string;
      const mine = events.filter((e) => e.change_request_id === id);
      const targets = mine.filter((e) => !(e.action as string).startsWith('change.'));
      const applies = mine.filter((e) => e.action === 'change.apply').length;
      if (req.state === 'applied') {
        if (targets.length !== K || applies !== 1 || new Set(targets.map((e) => e.target_name)).size !== K)
          problems.push(`${id} applied, but ${targets.length} target events (of ${K}) and ${applies} change.apply`);
      } else if (targets.length !== 0 || applies !== 0) problems.push(`${id} is ${req.state}, but ${targets.length} target events and ${applies} change.apply: partly applied`);
      // Its bases: every target at one state (one marker), as an all-or-nothing history leaves them.
      const markers = new Set(Object.values(basesOf.get(id) ?? {}).map((b) => b?.rules?.[0]?.id ?? 'none'));
      if (markers.size !== 1) problems.push(`${id}: its bases saw its targets at different states: ${[...markers].join(', ')}`);
    }
    for (const r of this.rounds) {
      if (r.apply === 'acked' && (r.id === null || state.get(r.id) !== 'applied')) problems.push(`${r.marker} (${r.id}): apply acknowledged, but the request is ${r.id === null ? 'unknown' : state.get(r.id)}`);
      if (r.id !== null && !state.has(r.id)) problems.push(`${r.marker}: created as ${r.id}, which is not in the database`);
    }
    // The data: every target holds the after-state of the last applied request.
    const applied = requests.filter((r) => r.state === 'applied').sort((a, b) => Number(a.applied_version) - Number(b.applied_version));
    const lastMarker = applied.length === 0 ? 'cr-init' : this.rounds.find((r) => r.id === applied.at(-1)!.id)?.marker;
    const held = configs.map((c) => `${c.flag_name} ${(JSON.parse(c.rules as string) as { id: string }[])[0]?.id}`).sort();
    const want = ChangeRequestLoop.FLAGS.map((f) => `${f} ${lastMarker}`);
    if (JSON.stringify(held) !== JSON.stringify(want)) problems.push(`targets hold ${held.join(', ')}; the last applied request set ${want.join(', ')}`);
    const count = (k: 'create' | 'review' | 'apply', o: Outcome) => this.rounds.filter((r) => r[k] === o).length;
    const summary =
      `${this.rounds.length} rounds; created ${count('create', 'acked')}, approved ${count('review', 'acked')}, applies acknowledged ${count('apply', 'acked')}, ` +
      `refused ${count('apply', 'rejected')}, unknown ${count('apply', 'unknown') + count('apply', 'committed')}; applied in the database ${applied.length} of ${requests.length} requests; ` +
      `answers by status ${JSON.stringify(Object.fromEntries(this.stats.byStatus))}, retries ${this.stats.retries}`;
    return { problems, accounted, summary };
  }
}
