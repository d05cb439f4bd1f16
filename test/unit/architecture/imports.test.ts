/**
 * Each actor imports only what it runs (docs/cluster.md, docs/evaluation.md): the front's
 * evaluation path (the evaluation stage, src/evaluation/, and the transports over it: REST, OFREP,
 * GraphQL's evaluation, the feed) and the evaluation workers load the engine, the shared store and
 * the evaluation stage, never what the management layer owns (features' services, stores and
 * writes, segments, schedules, src/management/, the storage drivers). The portable folder
 * (src/engine/) imports no I/O and nothing outside it but the pure domain modules it shares, and
 * the OpenFeature provider takes server code from that folder only. Checked on the source's static
 * import graph, so a new import that breaks a rule fails here, naming it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import t from 'tap';
import { projectPath } from '../../../src/util/paths.js';

const ROOT = projectPath();

/** `import … from 'x'`, `import 'x'`, `export … from 'x'`, `import('x')`: the specifier, and whether the import is type-only. */
const IMPORT = /^\s*(import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm;

interface Import {
  /** The project file a relative import resolves to (relative to the root), or null for a package or builtin. */
  file: string | null;
  specifier: string;
  typeOnly: boolean;
}

function importsOf(file: string): Import[] {
  const abs = resolve(ROOT, file);
  const out: Import[] = [];
  for (const m of readFileSync(abs, 'utf8').matchAll(IMPORT)) {
    const specifier = m[3] ?? m[4];
    const typeOnly = m[2] !== undefined;
    const target = specifier.startsWith('.') ? relative(ROOT, join(dirname(abs), specifier.replace(/\.js$/, '.ts'))) : null;
    out.push({ file: target, specifier, typeOnly });
  }
  return out;
}

/**
 * Every project file `entries` load at run time, directly or not (type-only imports left out: they
 * are erased), and every package or builtin they import, each with the file that imports it.
 */
function importGraph(...entries: string[]): { files: Set<string>; packages: Map<string, string> } {
  const files = new Set<string>();
  const packages = new Map<string, string>();
  const stack = [...entries];
  while (stack.length > 0) {
    const file = stack.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    for (const imp of importsOf(file)) {
      if (imp.typeOnly) continue;
      if (imp.file === null) packages.set(imp.specifier, file);
      else stack.push(imp.file);
    }
  }
  return { files, packages };
}

const tsFiles = (dir: string): string[] =>
  readdirSync(resolve(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [join(dir, e.name)] : [],
  );

/** What the management layer owns: run by the management actor only. */
const MANAGEMENT = [
  /^src\/management\//,
  /^src\/storage\//,
  // Every management feature, whole (flags, keys, audit, operator, organizations, segments,
  // schedules), but its OpenAPI description: schemas the feed's description shares (its imports are walked too).
  /^src\/features\/(flags|keys|audit|operator|organizations|segments|schedules)\/(?!openapi\.ts$)/,
  // Any feature's service and store, wherever a new feature puts them.
  /^src\/features\/[^/]+\/(service|store)\.ts$/,
  /^src\/features\/(write|changes-since|idempotency|snapshot-source)\.ts$/,
  /^src\/graphql\/(resolvers|routes)\.ts$/,
];
const management = (files: Iterable<string>) => [...files].filter((f) => MANAGEMENT.some((re) => re.test(f)));

/** Database drivers and the migration runner: the management actor's alone. */
const DRIVERS = /^(postgres|pg|@electric-sql\/pglite)(\/|$)/;
const drivers = (packages: Map<string, string>) => [...packages].filter(([p]) => DRIVERS.test(p)).map(([p, by]) => `${p} (imported by ${by})`);

/** The front's evaluation path: the stage and every transport's evaluation over it. */
const FRONT_EVALUATION = [
  ...tsFiles('src/evaluation'),
  'src/features/evaluation/routes.ts',
  'src/ofrep/routes.ts',
  'src/feed/routes.ts',
  'src/graphql/execute.ts',
  'src/graphql/evaluation-resolvers.ts',
  'src/graphql/plan.ts',
];

t.test('evaluation workers import no management code and no database driver', async (t) => {
  const { files, packages } = importGraph('workers/evaluator.ts');
  t.ok(files.has('src/engine/engine.ts'), 'the walk follows imports (it reaches the engine)');
  t.ok(files.has('src/evaluation/run.ts'), 'the worker runs the evaluation stage');
  t.ok(files.has('src/graphql/evaluation-resolvers.ts'), 'the worker uses the evaluation resolvers');
  t.ok(packages.has('piscina'), 'the walk records packages');
  t.same(management(files), [], 'no management module in the evaluation worker');
  t.same(drivers(packages), [], 'no database driver in the evaluation worker');
});

t.test("the front's evaluation path imports no management code and no database driver", async (t) => {
  const { files, packages } = importGraph(...FRONT_EVALUATION);
  for (const f of ['src/evaluation/pool/eval-pool.ts', 'src/evaluation/key-streams.ts', 'src/feed/feed.ts', 'src/ofrep/streams.ts', 'src/engine/engine.ts']) {
    t.ok(files.has(f), `the walk reaches ${f}`);
  }
  t.same(management(files), [], 'no management module on the evaluation path');
  t.same(drivers(packages), [], 'no database driver on the evaluation path');
});

t.test('the management layer is what MANAGEMENT names (segments, schedules, every service and store)', async (t) => {
  for (const f of [
    'src/features/segments/service.ts',
    'src/features/segments/store.ts',
    'src/features/schedules/runner.ts',
    'src/features/schedules/store.ts',
    'src/features/flags/service.ts',
    'src/features/write.ts',
    'src/management/actor.ts',
    'src/storage/postgres.ts',
  ]) {
    t.same(management([f]), [f], `${f} is management`);
  }
  for (const f of ['src/features/evaluation/routes.ts', 'src/evaluation/evaluate.ts', 'src/feed/routes.ts', 'src/ofrep/evaluate.ts', 'src/graphql/execute.ts', 'src/features/segments/openapi.ts']) {
    t.same(management([f]), [], `${f} is not`);
  }
});

t.test('the management actor runs the management routes and owns the database drivers', async (t) => {
  const { files } = importGraph('workers/management.ts');
  for (const f of [
    'src/management/actor.ts',
    'src/storage/pglite.ts',
    'src/storage/postgres.ts',
    'src/graphql/resolvers.ts',
    'src/features/flags/service.ts',
    'src/features/segments/service.ts',
    'src/features/schedules/service.ts',
  ]) {
    t.ok(files.has(f), `management worker imports ${f}`);
  }
});

t.test('the front thread loads no database driver', async (t) => {
  const { files, packages } = importGraph('src/node.ts');
  const local = [...files].filter((f) => /^src\/storage\/(pglite|postgres|migrate)\.ts$/.test(f) || f === 'src/management/actor.ts');
  t.same(local, [], 'node.ts reaches the database only through the management actor');
  t.same(drivers(packages), [], 'no database driver package on the front');
});

/**
 * The portable folder: the engine and the pure pieces an in-process consumer needs (the provider
 * bundles it). Its files may import each other and the domain modules below, which are pure and
 * import nothing themselves (checked); no package, no builtin: none is pure enough to need.
 */
const PORTABLE = 'src/engine/';
const SHARED_PURE = ['src/domain/name-matching.ts', 'src/domain/condition-syntax.ts', 'src/domain/types.ts'];

t.test('the portable folder imports no I/O and nothing outside it but pure, import-free domain modules', async (t) => {
  const files = tsFiles(PORTABLE);
  for (const f of ['src/engine/engine.ts', 'src/engine/feed-decode.ts', 'src/engine/ofrep-answer.ts', 'src/engine/openfeature-context.ts']) {
    t.ok(files.includes(f), `${f} is in the portable folder`);
  }
  const outside: string[] = [];
  for (const file of files) {
    for (const imp of importsOf(file)) {
      if (imp.file === null || !(imp.file.startsWith(PORTABLE) || SHARED_PURE.includes(imp.file))) outside.push(`${file} imports ${imp.specifier}`);
    }
  }
  t.same(outside, [], 'every import of the portable folder stays in it (or in the shared pure domain modules)');
  for (const shared of SHARED_PURE) t.same(importsOf(shared), [], `${shared} imports nothing`);
});

t.test('the OpenFeature provider takes server code from the portable folder only', async (t) => {
  const PROVIDER = 'packages/openfeature-provider/src/';
  const server: string[] = [];
  for (const file of tsFiles(PROVIDER)) {
    for (const imp of importsOf(file)) {
      if (imp.file !== null && !imp.file.startsWith(PROVIDER) && !imp.file.startsWith(PORTABLE)) server.push(`${file} imports ${imp.specifier}`);
    }
  }
  t.same(server, [], 'no server module outside src/engine/ (not src/ofrep/, not src/feed/)');
  const { files } = importGraph(...tsFiles(PROVIDER));
  t.ok(files.has('src/engine/feed-decode.ts'), 'the provider decodes the feed with the portable decoder');
  t.same([...files].filter((f) => !f.startsWith(PROVIDER) && !f.startsWith(PORTABLE) && !SHARED_PURE.includes(f)), [], 'nor anything they import');
});

t.test('the walk sees what it must: a type-only import is not loaded, a package is recorded', async (t) => {
  const imps = importsOf('src/engine/compiled.ts');
  t.ok(imps.some((i) => i.typeOnly && i.file === 'src/domain/types.ts'), 'import type is read as type-only');
  const { files } = importGraph('src/engine/compiled.ts');
  t.notOk(files.has('src/domain/types.ts'), 'and not followed as a run-time import');
});

t.test('each side of the management boundary builds only what it runs (src/management/boundary.ts)', async (t) => {
  const { files: front } = importGraph('src/node.ts');
  t.ok(front.has('src/management/boundary.ts') && front.has('src/management/front-routes.ts'), 'the front admits from the admission table');
  const handlers = [...front].filter(
    (f) =>
      /^src\/features\/(?!evaluation\/)[^/]+\/(service|routes|list-route|runner)\.ts$/.test(f) ||
      /^src\/features\/(write|resource-routes|idempotency)\.ts$/.test(f) ||
      /^src\/management\/(actor|handlers|idempotency)\.ts$/.test(f) ||
      /^src\/graphql\/(resolvers|routes)\.ts$/.test(f),
  );
  t.same(handlers.filter((f) => f !== 'src/features/ui/routes.ts'), [], 'the front imports no management handler, service or write');
  const sql = [...front].filter((f) => /^src\/features\/[^/]+\/store\.ts$/.test(f) || /^src\/(features\/changes-since|features\/snapshot-source)\.ts$/.test(f));
  t.same(sql, [], 'the front holds no SQL: it asks the actor by name (mailbox.ts FrontAsks)');
  const { files: actor } = importGraph('workers/management.ts');
  t.ok(actor.has('src/management/handlers.ts') && actor.has('src/management/boundary.ts'), 'the actor checks its handlers against the admission table');
  const admission = [...actor].filter(
    (f) =>
      /^src\/auth\/(admission|admission-state|authenticate|key-cache|auth-failures)\.ts$/.test(f) ||
      /^src\/ratelimit\//.test(f) ||
      /^src\/(evaluation\/pool|cluster)\//.test(f) ||
      /^src\/management\/(front-routes|handle|priority)\.ts$/.test(f) ||
      /^src\/graphql\/admit\.ts$/.test(f) ||
      /^src\/http\/(front|uws-front|node-front|uws)\.ts$/.test(f),
  );
  t.same(admission, [], 'the actor builds no admission state, front or pool');
});
