import postgres from 'postgres';
import { type Database, type Queryable, isConnectionError, translated } from './database.js';
import { VexilError } from '../domain/errors.js';

export interface PostgresOptions {
  max?: number;
  /**
   * VEXIL_DB_STATEMENT_TIMEOUT_MS (docs/storage.md): set on every connection as
   * `statement_timeout`, `lock_timeout` and `idle_in_transaction_session_timeout`. Unset: the
   * server's defaults.
   */
  statementTimeoutMs?: number;
}

/**
 * Test hooks (never set in production). `loseCommitReply` is asked after a transaction really
 * committed; returning true makes the adapter behave as if the COMMIT's reply was lost with the
 * connection, so the outcome resolution below runs against the real database.
 */
export const postgresTestHooks: {
  loseCommitReply: (() => boolean) | null;
  /** Runs after the transaction id was read, just before COMMIT (a test cuts the connection here). */
  beforeCommit: ((backendPid: number) => Promise<void>) | null;
} = { loseCommitReply: null, beforeCommit: null };

/** How a transaction whose COMMIT reply was lost ended, asked by its id on another connection. */
export type CommitOutcome = 'committed' | 'aborted' | 'unknown';

/** A real PostgreSQL server through postgres.js. */
export async function openPostgres(url: string, opts: PostgresOptions = {}): Promise<Database> {
  const timeout = opts.statementTimeoutMs;
  const sql = postgres(url, {
    max: opts.max ?? 10,
    onnotice: () => {},
    connect_timeout: 5,
    ...(timeout === undefined
      ? {}
      : {
          connection: {
            statement_timeout: timeout,
            lock_timeout: timeout,
            idle_in_transaction_session_timeout: timeout,
          },
        }),
    types: {
      // Our SQL passes jsonb parameters as JSON text (as PGlite expects); postgres.js would
      // JSON-encode that text a second time and store a JSON string.
      jsonText: {
        to: 3802,
        from: [114, 3802],
        serialize: (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v)),
        parse: (s: string) => JSON.parse(s),
      },
    },
  });
  const wrap = (q: postgres.Sql | postgres.TransactionSql): Queryable => ({
    query: <T>(text: string, params?: unknown[]) =>
      translated(async () => (await q.unsafe(text, (params ?? []) as postgres.ParameterOrJSON<never>[])) as unknown as T[]),
    exec: (script: string) => translated(async () => void (await q.unsafe(script))),
  });
  const root = wrap(sql);
  // Fail fast when the server is not there.
  await root.query('select 1');

  /**
   * Asks (on any other pooled connection) how transaction `txid` ended. 'in progress' means the
   * server has not yet noticed the lost connection: ask again for up to `waitMs`.
   */
  async function outcome(txid: string, waitMs: number): Promise<CommitOutcome> {
    const until = Date.now() + waitMs;
    for (;;) {
      let status: string | null = null;
      try {
        const rows = await sql.unsafe('select txid_status($1::bigint) as status', [txid]);
        status = (rows[0]?.status as string | null) ?? null;
      } catch {
        status = null; // the database is unreachable right now: try again until the deadline
      }
      if (status === 'committed') return 'committed';
      if (status === 'aborted') return 'aborted';
      if (Date.now() >= until) return 'unknown';
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  return {
    kind: 'postgres',
    query: root.query,
    exec: root.exec,
    transaction: <T>(fn: (tx: Queryable) => Promise<T>) =>
      translated(async () => {
        let txid: string | null = null;
        let result!: T;
        try {
          await sql.begin(async (tx) => {
            result = await fn(wrap(tx));
            // Read last, after the work: a transaction whose reply is lost from here on is found by it.
            const rows = await tx.unsafe('select txid_current()::text as txid');
            txid = rows[0]!.txid as string;
            if (postgresTestHooks.beforeCommit !== null) {
              const [{ pid }] = await tx.unsafe('select pg_backend_pid() as pid');
              await postgresTestHooks.beforeCommit(pid as number);
            }
          });
          if (postgresTestHooks.loseCommitReply?.() === true) {
            throw Object.assign(new Error('test hook: COMMIT reply lost'), { code: 'CONNECTION_CLOSED' });
          }
          return result;
        } catch (err) {
          // Only a connection lost after the work was done leaves the outcome open: COMMIT may have run.
          if (txid === null || !isConnectionError(err)) throw err;
          const found = await outcome(txid, (timeout ?? 5000) + 1000);
          if (found === 'committed') return result;
          if (found === 'aborted') throw err;
          throw new VexilError('UNAVAILABLE', 'The database connection was lost during the commit; its outcome is not known yet', {
            cause: err,
            retryAfter: 1,
          });
        }
      }),
    async close() {
      await sql.end({ timeout: 5 });
    },
  };
}
