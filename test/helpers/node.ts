/**
 * Test harness: starts real Vexil nodes (real uWS HTTP, real PGlite or PostgreSQL) on free
 * loopback ports, and talks to them with real HTTP requests.
 *
 *   const n = await startTestNode(t);            // PGlite on a copy of the migrated template (pgliteCopy), torn down with the test
 *   const n = await startTestNode(t, { db: 'postgres' })  // fresh database on DATABASE_URL
 *   const r = await n.req('POST', '/api/flags', { key: n.adminKey, body: {...} });
 */
import { createHash, randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { migrate } from '../../src/storage/migrate.js';
import { openPGlite } from '../../src/storage/pglite.js';
import { projectPath } from '../../src/util/paths.js';
import { loadConfig } from '../../src/config.js';
import { startNode, type StartOptions, type VexilNode } from '../../src/node.js';
import { createLogger } from '../../src/util/log.js';
import { requireFreshDist } from './dist.js';

export interface Res<T = any> {
  status: number;
  headers: Headers;
  /** Parsed JSON body (undefined when empty). */
  body: T;
  text: string;
}

export interface ReqOptions {
  key?: string;
  body?: unknown;
  /** Sent as is (no JSON encoding). */
  raw?: string | Buffer | Uint8Array;
  headers?: Record<string, string>;
}

export interface TestNode {
  url: string;
  adminKey: string;
  node: VexilNode;
  req<T = any>(method: string, path: string, opts?: ReqOptions): Promise<Res<T>>;
  close(): Promise<void>;
}

export const randomKey = (): string => randomBytes(32).toString('hex');

export async function request<T = any>(base: string, method: string, path: string, opts: ReqOptions = {}): Promise<Res<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key !== undefined) headers['x-management-key'] = opts.key;
  let body: string | Buffer | Uint8Array | undefined;
  if (opts.raw !== undefined) body = opts.raw;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  let parsed: unknown;
  if (text !== '') {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

export interface TestNodeOptions {
  db?: 'pglite' | 'postgres';
  /** Database URL to use instead of a fresh one (several nodes on one database). */
  databaseUrl?: string;
  /** Persist PGlite here instead of in memory. */
  dataDir?: string;
  adminKey?: string;
  env?: Record<string, string>;
  start?: StartOptions;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

export async function startTestNode(t: Teardown | null, opts: TestNodeOptions = {}): Promise<TestNode> {
  requireFreshDist(); // the actor runs dist/workers/management.bundle.js
  const adminKey = opts.adminKey ?? randomKey();
  let databaseUrl = opts.databaseUrl;
  if (databaseUrl === undefined && opts.db === 'postgres') {
    const db = await freshPostgresDatabase();
    databaseUrl = db.url;
    t?.teardown(db.drop);
  }
  let dataDir = opts.dataDir;
  if (dataDir === undefined && databaseUrl === undefined) {
    dataDir = await pgliteCopy();
    const dir = dataDir;
    t?.teardown(() => rmSync(dir, { recursive: true, force: true }));
  }
  const env: Record<string, string> = {
    HOST: '127.0.0.1',
    PORT: '0',
    VEXIL_BOOTSTRAP_ADMIN_KEY: adminKey,
    VEXIL_LOG_LEVEL: 'silent',
    VEXIL_EVAL_WORKERS: '0',
    // One front thread unless a test asks for more (test/node/threads); `VEXIL_FRONT_THREADS=4 npm
    // test` runs every suite on four.
    VEXIL_FRONT_THREADS: process.env.VEXIL_FRONT_THREADS ?? '1',
    // `VEXIL_HTTP_FRONT=node npm test` runs every suite on the node:http front.
    ...(process.env.VEXIL_HTTP_FRONT ? { VEXIL_HTTP_FRONT: process.env.VEXIL_HTTP_FRONT } : {}),
    ...(dataDir ? { VEXIL_DATA_DIR: dataDir } : {}),
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ...opts.env,
  };
  const config = loadConfig(env);
  const node = await startNode(config, {
    log: createLogger(config.logLevel),
    ...opts.start,
  });
  const tn: TestNode = {
    url: node.url,
    adminKey,
    node,
    req: (method, path, o) => request(node.url, method, path, o),
    close: () => node.close(),
  };
  t?.teardown(() => node.close());
  return tn;
}

/** Free space a tmpfs needs for the tests' data directories there: a migrated copy is about 40 MB. */
const DATA_ROOT_MIN_FREE = 1024 ** 3;
let dataRoot: string | undefined;

/**
 * Where the tests' PGlite data directories go (the template, its copies, and the empty directories
 * of the tests of a first start): VEXIL_TEST_DATA_ROOT if set, else /dev/shm, a tmpfs, when it has
 * a GiB free, else the OS temp dir. On a disk each copy wrote and then deleted 40 MB (a WAL
 * segment of 16 MB, three databases): 1.7-2.6 s per copy on this machine's disk, 0.13-0.18 s on
 * /dev/shm (load 7, 3 copies each), and the node group starts a few hundred nodes.
 */
export function testDataRoot(): string {
  dataRoot ??= process.env.VEXIL_TEST_DATA_ROOT || (hasRoom('/dev/shm') ? '/dev/shm' : tmpdir());
  return dataRoot;
}

function hasRoom(dir: string): boolean {
  try {
    const s = statfsSync(dir);
    return s.bavail * s.bsize >= DATA_ROOT_MIN_FREE;
  } catch {
    return false; // no such directory (not Linux)
  }
}

/** A new empty directory under testDataRoot() (`prefix` plus random characters). */
export const testDataDir = (prefix: string): string => mkdtempSync(join(testDataRoot(), prefix));

/**
 * A fresh PGlite data directory, already migrated (not bootstrapped: the node's first start on it
 * creates organization `default`). PGlite's initdb takes seconds in WASM; it runs once per schema
 * version into a template (kept under testDataRoot() across runs, named by a digest of sql/), and
 * each node gets a copy. The tests of a node's very first start (initdb and every migration:
 * test/node/rest/bootstrap.test.ts, test/cluster/audit/migration.test.ts) start on an empty
 * directory (testDataDir) instead.
 */
export async function pgliteCopy(): Promise<string> {
  const sqlDir = projectPath('sql');
  const digest = createHash('sha256');
  for (const f of readdirSync(sqlDir).sort()) digest.update(f).update(readFileSync(join(sqlDir, f)));
  const template = join(testDataRoot(), `vexil-pglite-template-${digest.digest('hex').slice(0, 12)}`);
  if (!existsSync(template)) {
    const building = testDataDir('vexil-pglite-build-');
    const db = await openPGlite(building);
    await migrate(db);
    await db.close();
    try {
      renameSync(building, template);
    } catch {
      rmSync(building, { recursive: true, force: true }); // another process won the race
    }
  }
  const copy = testDataDir('vexil-test-');
  cpSync(template, copy, { recursive: true });
  return copy;
}

/** DATABASE_URL when the PostgreSQL suites should run, else undefined (they skip with a reason). */
export const postgresUrl = (): string | undefined => process.env.DATABASE_URL || undefined;
export const skipWithoutPostgres = (): string | false =>
  postgresUrl() ? false : 'DATABASE_URL is not set: PostgreSQL suite skipped';

/** Creates an empty database on the DATABASE_URL server; `drop` removes it. */
export async function freshPostgresDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const base = postgresUrl();
  if (!base) throw new Error('DATABASE_URL is not set');
  const name = `vexil_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = postgres(base, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const u = new URL(base);
  u.pathname = '/' + name;
  return {
    url: u.toString(),
    drop: async () => {
      const a = postgres(base, { max: 1, onnotice: () => {} });
      await a.unsafe(`drop database if exists ${name} with (force)`);
      await a.end();
    },
  };
}

// ---- fixtures -------------------------------------------------------------------------------------

export const boolVariants = [
  { key: 'on', value: true, valueType: 'boolean' },
  { key: 'off', value: false, valueType: 'boolean' },
];

/** Creates a boolean flag (201 asserted by the caller if it matters). */
export function createFlag(n: TestNode, name: string, extra: Record<string, unknown> = {}, key = n.adminKey) {
  return n.req('POST', '/api/flags', { key, body: { name, project: 'default', type: 'boolean', variants: boolVariants, ...extra } });
}

export function upsertConfig(n: TestNode, name: string, config: Record<string, unknown>, key = n.adminKey) {
  return n.req('POST', `/api/flags/${encodeURIComponent(name)}/configs`, {
    key,
    body: { stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100, ...config },
  });
}

/** Creates a key and returns its value. */
export async function createKey(n: TestNode, body: Record<string, unknown>): Promise<string> {
  const r = await n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'test', ...body } });
  if (r.status !== 201) throw new Error(`createKey failed: ${r.status} ${r.text}`);
  return r.body.key as string;
}

export function evaluate(n: TestNode, key: string, flag: string, body: Record<string, unknown>, explain = false) {
  return n.req('POST', `/flags/${encodeURIComponent(flag)}${explain ? '?explain=true' : ''}`, { key, body });
}

// ---- fixtures: problem+json, operator API, key values (auth/keys/operator suites) ---------------

/** A Management Key value: 64 lowercase hex characters (docs/api.md, "Keys"). */
export const HEX64 = /^[0-9a-f]{64}$/;
/** Any 64-hex run inside a larger text (used to prove a response or log never carries a key value). */
export const HEX64_ANYWHERE = /(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])/;

/** An operator token for nodes started with `env: { VEXIL_OPERATOR_TOKEN: OPERATOR_TOKEN }`. */
export const OPERATOR_TOKEN = 'test-operator-token-0123456789abcdef';

/**
 * Asserts an RFC 9457 problem (docs/api.md, "Errors"): the status, content type
 * application/problem+json, and a body {type, title, status, detail, code} with the given code.
 */
/**
 * Asserts an RFC 9457 problem+json error: status, content type, `{type, title, status, detail,
 * code}`. `what` labels the assertions; a RegExp instead must match `detail`.
 */
export function expectProblem(
  t: Pick<import('tap').Test, 'equal' | 'match' | 'type'>,
  res: Res,
  status: number,
  code: string,
  what: string | RegExp = '',
): void {
  const at = typeof what === 'string' && what !== '' ? `${what}: ` : '';
  t.equal(res.status, status, `${at}HTTP ${status} ${code} (got ${res.status} ${res.text.slice(0, 300)})`);
  t.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/, `${at}problem+json content type`);
  t.equal(res.body?.status, status, `${at}problem.status`);
  t.equal(res.body?.code, code, `${at}problem.code`);
  t.type(res.body?.type, 'string', `${at}problem.type`);
  t.type(res.body?.title, 'string', `${at}problem.title`);
  t.type(res.body?.detail, 'string', `${at}problem.detail`);
  if (what instanceof RegExp) t.match(res.body?.detail, what, 'problem.detail names the cause');
}

/** A call to the operator API (docs/api.md, "Operator API"). `token: null` sends no token. */
export function operatorRequest(n: TestNode, method: string, path: string, body?: unknown, token: string | null = OPERATOR_TOKEN) {
  return n.req(method, `/api/operator${path}`, { body, headers: token === null ? {} : { 'x-operator-token': token } });
}

/**
 * Creates an organization through the operator API (the node needs VEXIL_OPERATOR_TOKEN =
 * OPERATOR_TOKEN) and returns a TestNode view whose `adminKey` is the new organization's admin key.
 */
export async function createOrganization(
  n: TestNode,
  name: string,
  extra: { environments?: string[]; applications?: string[]; subscriptionActive?: boolean } = {},
): Promise<TestNode> {
  const r = await operatorRequest(n, 'POST', '/organizations', {
    name,
    environments: ['development', 'production'],
    applications: ['default'],
    ...extra,
  });
  if (r.status !== 201) throw new Error(`createOrganization failed: ${r.status} ${r.text}`);
  return { ...n, adminKey: r.body.adminKey as string };
}
