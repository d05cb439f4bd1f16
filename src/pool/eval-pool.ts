/**
 * The front thread's side of the evaluation pool: replicates snapshots to the workers and hands
 * them evaluations in batches. A Piscina task per request costs far more than an evaluation, so
 * requests that arrive in the same event-loop turn travel together (up to `maxBatch`).
 */
import { BroadcastChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { VexilError } from '../domain/errors.js';
import type { Evaluation } from '../domain/types.js';
import type { OrgSnapshot } from '../evaluation/index.js';
import type { SnapshotRegistry, Touches } from '../snapshots/registry.js';
import { projectPath } from '../util/paths.js';
import type { Logger } from '../util/log.js';
import type { EvalItem, EvalOutcome, FlagData, GraphQLItem, PoolItem, SnapshotMessage, WorkerData } from './protocol.js';

const flagData = (snap: OrgSnapshot, name: string): FlagData | null => {
  const c = snap.flags.get(name);
  return c === undefined ? null : { flag: c.flag, configs: [...c.configs.values()].map((cc) => cc.config) };
};

export function fullMessage(snap: OrgSnapshot): SnapshotMessage {
  const flags: FlagData[] = [];
  for (const name of snap.flags.keys()) flags.push(flagData(snap, name)!);
  return { type: 'full', org: snap.org, flags };
}

interface Pending {
  item: PoolItem;
  resolve: (outcome: EvalOutcome) => void;
  reject: (err: unknown) => void;
  retried: boolean;
}

export interface PoolOptions {
  threads: number;
  channel: string;
  graphqlMaxDepth: number;
  graphqlMaxEvaluations: number;
}

export class EvalPool {
  private readonly pool: Piscina;
  private readonly channel: BroadcastChannel;
  private pending: Pending[] = [];
  private scheduled = false;
  /** Items handed to the workers so far (tests and diagnostics). */
  itemsSent = 0;

  constructor(
    private readonly registry: SnapshotRegistry,
    opts: PoolOptions,
    private readonly log: Logger,
    private readonly maxBatch = 64,
  ) {
    this.channel = new BroadcastChannel(opts.channel);
    this.channel.unref();
    this.channel.onmessage = (ev: unknown) => {
      if ((ev as { data: SnapshotMessage }).data.type === 'hello') this.sendAll();
    };
    registry.onChange((orgId, snap, touches) => this.replicate(orgId, snap, touches));
    this.pool = new Piscina({
      filename: projectPath('dist', 'workers', 'evaluator.js'),
      minThreads: opts.threads,
      maxThreads: opts.threads,
      idleTimeout: 2 ** 31 - 1,
      workerData: {
        channel: opts.channel,
        graphqlMaxDepth: opts.graphqlMaxDepth,
        graphqlMaxEvaluations: opts.graphqlMaxEvaluations,
      } satisfies WorkerData,
    });
    this.pool.on('error', (err: unknown) => this.log.error('evaluation worker error', { err: err as Error }));
  }

  get threads(): number {
    return this.pool.threads.length;
  }

  private post(msg: SnapshotMessage): void {
    this.channel.postMessage(msg);
  }

  private sendAll(): void {
    for (const orgId of this.registry.loadedOrgIds()) {
      const snap = this.registry.peek(orgId);
      if (snap !== undefined) this.post(fullMessage(snap));
    }
  }

  private replicate(orgId: string, snap: OrgSnapshot | null, touches: Touches): void {
    if (snap === null) this.post({ type: 'drop', orgId });
    else if (touches === 'all') this.post(fullMessage(snap));
    else if (touches === 'settings') this.post({ type: 'settings', org: snap.org });
    else this.post({ type: 'flag', org: snap.org, name: touches.flag, data: flagData(snap, touches.flag) });
  }

  evaluate(item: Omit<EvalItem, 'kind'>): Promise<Evaluation> {
    return this.submit({ kind: 'eval', ...item }) as Promise<Evaluation>;
  }

  /** Executes an evaluation-only GraphQL document in a worker; resolves with the serialised response. */
  async graphql(item: Omit<GraphQLItem, 'kind'>): Promise<string> {
    return ((await this.submit({ kind: 'graphql', ...item })) as { graphql: string }).graphql;
  }

  private submit(item: PoolItem): Promise<EvalOutcome> {
    return new Promise((resolve, reject) => {
      this.enqueue({ item, resolve, reject, retried: false });
    });
  }

  private enqueue(p: Pending): void {
    this.pending.push(p);
    if (this.pending.length >= this.maxBatch) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.itemsSent += batch.length;
    this.pool.run({ nowMs: Date.now(), items: batch.map((p) => p.item) }).then(
      (outcomes: EvalOutcome[]) => {
        for (let i = 0; i < batch.length; i++) {
          const o = outcomes[i];
          if ('error' in o) {
            batch[i].reject(new VexilError(o.error === 'NOT_FOUND' ? 'NOT_FOUND' : 'UNAVAILABLE', o.message));
          } else batch[i].resolve(o);
        }
      },
      (err: unknown) => {
        // A worker died mid-task: Piscina replaces it; retry each request once, then give up.
        this.log.warn('evaluation batch failed', { err: err as Error, size: batch.length });
        for (const p of batch) {
          if (p.retried) p.reject(new VexilError('UNAVAILABLE', 'Evaluation worker failed; try again', { cause: err }));
          else this.enqueue({ ...p, retried: true });
        }
      },
    );
  }

  async close(): Promise<void> {
    this.channel.close();
    await this.pool.destroy();
  }
}
