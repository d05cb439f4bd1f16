/**
 * The embedded database: PostgreSQL compiled to WASM (PGlite), persisted to `dataDir`.
 *
 * Statements go to PGlite as wire-protocol messages through its synchronous entry point
 * (`execProtocolRawSync`), each text prepared once under a name (docs/storage.md, "The embedded
 * database's statements"). PGlite's own `query` sends six messages one round trip each and parses
 * and analyses the text every time; here a statement already prepared is one round trip (Bind,
 * Execute, Sync) with no parse: about 40 % of the CPU for a small statement. Each execution is
 * still planned for its parameters (`force_custom_plan`: the embedded database never analyses its
 * tables, so a kept generic plan goes stale as they grow). That CPU is what a write costs the
 * management actor, whose share of a saturated core is small (docs/cluster.md).
 *
 * One session: a transaction holds the session until it ends, so no other statement runs inside
 * it (PGlite's `Mutex`, held from BEGIN to COMMIT); a statement outside a transaction waits for
 * it. Every statement runs to its end synchronously, so two can never interleave inside PGlite.
 */
import { mkdirSync } from 'node:fs';
import { Mutex, PGlite, parse, protocol } from '@electric-sql/pglite';
import { type Database, type Queryable, translated } from './database.js';

type BackendMessage = Parameters<Parameters<InstanceType<typeof protocol.Parser>['parse']>[1]>[0];

/** How many statement texts stay prepared; the least recently used beyond it is closed. */
export const STATEMENT_CACHE_SIZE = 256;

/** SQLSTATEs after which a prepared statement is prepared again: the result type changed (0A000), it is gone (26000). */
const REPREPARE_CODES = new Set(['0A000', '26000']);

interface Prepared {
  name: string;
  /** Parameter type OIDs, for PGlite's serializers. */
  paramTypes: number[];
  /** The statement's row description; null for a statement that returns no rows. */
  rows: BackendMessage | null;
}

/** A database error from PGlite's protocol parser: it carries the SQLSTATE as `code`. */
const isError = (m: BackendMessage): boolean => m.name === 'error';

function concat(parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The one PostgreSQL session of a PGlite instance, speaking the wire protocol to it directly. */
export class PGliteSession {
  /** By text, least recently used first (a Map keeps insertion order; a hit is moved to the end). */
  private readonly statements = new Map<string, Prepared>();
  private next = 0;

  constructor(
    private readonly db: PGlite,
    private readonly cacheSize = STATEMENT_CACHE_SIZE,
  ) {}

  /** Statements prepared now (tests). */
  get prepared(): number {
    return this.statements.size;
  }

  /** Runs protocol messages to their Sync; throws the first error the server answered with. */
  private run(message: Uint8Array): BackendMessage[] {
    const out: BackendMessage[] = [];
    new protocol.Parser().parse(this.db.execProtocolRawSync(message), (m) => out.push(m));
    const error = out.find(isError);
    if (error !== undefined) throw error;
    return out;
  }

  private prepare(text: string): Prepared {
    const name = `vx${this.next++}`;
    const answer = this.run(concat([
      protocol.serialize.parse({ name, text }),
      protocol.serialize.describe({ type: 'S', name }),
      protocol.serialize.sync(),
    ]));
    const params = answer.find((m) => m.name === 'parameterDescription') as { dataTypeIDs: number[] } | undefined;
    const prepared: Prepared = { name, paramTypes: params?.dataTypeIDs ?? [], rows: answer.find((m) => m.name === 'rowDescription') ?? null };
    this.statements.set(text, prepared);
    if (this.statements.size > this.cacheSize) this.forget(this.statements.keys().next().value as string);
    return prepared;
  }

  private forget(text: string): void {
    const p = this.statements.get(text);
    if (p === undefined) return;
    this.statements.delete(text);
    try {
      this.run(concat([protocol.serialize.close({ type: 'S', name: p.name }), protocol.serialize.sync()]));
    } catch {
      // Not closed (the transaction is aborted): it stays in the session, unused, until the database closes.
    }
  }

  private serialize(p: Prepared, params: readonly unknown[]): (string | null)[] {
    return params.map((v, i) => {
      if (v === null || v === undefined) return null;
      const serializer = this.db.serializers[p.paramTypes[i]];
      return serializer === undefined ? String(v) : serializer(v);
    });
  }

  /** One statement with `$n` parameters: its rows, parsed by PGlite's type parsers. */
  query<T>(text: string, params: readonly unknown[] = []): T[] {
    return this.statement<T>(text, params, false);
  }

  private statement<T>(text: string, params: readonly unknown[], retried: boolean): T[] {
    let p = this.statements.get(text);
    if (p === undefined) p = this.prepare(text);
    else {
      this.statements.delete(text);
      this.statements.set(text, p);
    }
    let answer: BackendMessage[];
    try {
      answer = this.run(concat([
        protocol.serialize.bind({ statement: p.name, values: this.serialize(p, params) }),
        protocol.serialize.execute({}),
        protocol.serialize.sync(),
      ]));
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === undefined || !REPREPARE_CODES.has(code)) throw err;
      // Its table changed shape, or outside SQL deallocated it: prepare it again. Inside a
      // transaction the error has aborted it, so the caller gets the error.
      this.forget(text);
      if (retried || this.inTransaction()) throw err;
      return this.statement<T>(text, params, true);
    }
    if (p.rows === null) return [];
    return parse.parseResults([p.rows, ...answer] as never, this.db.parsers)[0].rows as T[];
  }

  /** A script of statements without parameters (simple protocol). Returns the last command's tag. */
  exec(script: string): string {
    const answer = this.run(protocol.serialize.query(script));
    const done = answer.filter((m) => m.name === 'commandComplete') as unknown as { text: string }[];
    return done.length === 0 ? '' : done[done.length - 1].text;
  }

  private inTransaction(): boolean {
    return this.db.isInTransaction();
  }
}

/** A COMMIT the server answered with ROLLBACK: a statement of the transaction had failed. */
export class TransactionAborted extends Error {
  readonly code = '25P02';
  constructor() {
    super('The transaction was aborted: a statement in it failed, and COMMIT rolled it back');
  }
}

/** Embedded PostgreSQL (WASM) persisted to `dataDir`; `null` keeps it in memory (tests). */
export async function openPGlite(dataDir: string | null): Promise<Database> {
  if (dataDir !== null) mkdirSync(dataDir, { recursive: true });
  const db = dataDir === null ? await PGlite.create() : await PGlite.create(dataDir);
  const session = new PGliteSession(db);
  // Every execution is planned for its own parameters, as an unnamed statement is: a generic plan
  // chosen after five runs made the webhook dispatcher's claim 10 times slower (docs/storage.md).
  session.exec('set plan_cache_mode = force_custom_plan');
  // One holder at a time, in the order asked: a transaction holds the session until it ends.
  const lock = new Mutex();
  let closed = false;
  /** Runs `fn` holding the session, unless the database was closed meanwhile. */
  const holding = <T>(fn: () => T | Promise<T>): Promise<T> =>
    lock.runExclusive(async () => {
      if (closed) throw new Error('The embedded database is closed');
      return fn();
    });
  // A builtin file system (NodeFS, memory) writes through; another would flush here, as PGlite's own query does.
  const flushed = <T>(value: T): Promise<T> => db.syncToFs().then(() => value);

  return {
    kind: 'pglite',
    query: <T>(text: string, params?: unknown[]) => translated(() => holding(() => session.query<T>(text, params)).then(flushed)),
    exec: (script: string) => translated(() => holding(() => void session.exec(script)).then(flushed)),
    transaction: <T>(fn: (tx: Queryable) => Promise<T>) =>
      translated(() =>
        holding(async () => {
          let open = true;
          const inside = <R>(run: () => R): Promise<R> => {
            if (!open) return Promise.reject(new Error('Transaction is closed'));
            return translated(async () => run());
          };
          const tx: Queryable = {
            query: <R>(text: string, params?: unknown[]) => inside(() => session.query<R>(text, params)),
            exec: (script: string) => inside(() => void session.exec(script)),
          };
          session.exec('BEGIN');
          let result: T;
          try {
            result = await fn(tx);
          } catch (err) {
            open = false;
            try {
              session.exec('ROLLBACK');
            } catch {
              // Not expected; the caller's error is the one to report.
            }
            throw err;
          }
          open = false;
          if (session.exec('COMMIT') === 'ROLLBACK') throw new TransactionAborted();
          return flushed(result);
        }),
      ),
    close: () =>
      lock.runExclusive(async () => {
        try {
          if (!closed) await db.close();
        } finally {
          closed = true; // whoever still waits for the session is told it is closed
        }
      }),
  };
}
