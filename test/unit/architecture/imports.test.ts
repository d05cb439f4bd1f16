/**
 * Each actor imports only what it runs (docs/cluster.md): the evaluation workers load the engine,
 * the shared store and the evaluation resolvers, never the management layer or a database driver.
 * Checked on the source's static import graph, so a new import that breaks it fails here.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import t from 'tap';
import { projectPath } from '../../../src/util/paths.js';

const ROOT = projectPath();

/** Every project file `entry` imports, directly or not (relative imports; type-only ones left out). */
function importGraph(entry: string): Set<string> {
  const seen = new Set<string>();
  const stack = [resolve(ROOT, entry)];
  while (stack.length > 0) {
    const file = stack.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/^(?:import|export)\s+(?!type\b)(?:[^'";]*?\sfrom\s+)?['"](\.[^'"]+)['"]/gm)) {
      stack.push(join(dirname(file), m[1].replace(/\.js$/, '.ts')));
    }
  }
  return new Set([...seen].map((f) => relative(ROOT, f)));
}

const MANAGEMENT = [
  /^src\/management\//,
  /^src\/storage\//,
  /^src\/features\/(flags|keys|audit|operator|organizations)\//,
  /^src\/features\/write\.ts$/,
  /^src\/graphql\/resolvers\.ts$/,
  /^src\/graphql\/routes\.ts$/,
];

t.test('evaluation workers import no management code and no database driver', async (t) => {
  const graph = importGraph('workers/evaluator.ts');
  t.ok(graph.has('src/engine/engine.ts'), 'the walk follows imports (it reaches the engine)');
  t.ok(graph.has('src/graphql/evaluation-resolvers.ts'), 'the worker uses the evaluation resolvers');
  const leaks = [...graph].filter((f) => MANAGEMENT.some((re) => re.test(f)));
  t.same(leaks, [], 'no management module in the evaluation worker');
});

t.test('the management actor runs the management routes and owns the database drivers', async (t) => {
  const graph = importGraph('workers/management.ts');
  for (const f of ['src/management/actor.ts', 'src/storage/pglite.ts', 'src/storage/postgres.ts', 'src/graphql/resolvers.ts', 'src/features/flags/service.ts']) {
    t.ok(graph.has(f), `management worker imports ${f}`);
  }
});

t.test('the front thread loads no database driver', async (t) => {
  const graph = importGraph('src/node.ts');
  const drivers = [...graph].filter((f) => /^src\/storage\/(pglite|postgres|migrate)\.ts$/.test(f) || f === 'src/management/actor.ts');
  t.same(drivers, [], 'node.ts reaches the database only through the management actor');
});

t.test('each side of the management boundary builds only what it runs (src/management/boundary.ts)', async (t) => {
  const front = importGraph('src/node.ts');
  t.ok(front.has('src/management/boundary.ts') && front.has('src/management/front-routes.ts'), 'the front admits from the admission table');
  const handlers = [...front].filter(
    (f) =>
      /^src\/features\/(?!evaluation\/)[^/]+\/(service|routes|list-route|runner)\.ts$/.test(f) ||
      /^src\/features\/(write|resource-routes|idempotency)\.ts$/.test(f) ||
      /^src\/management\/(actor|handlers|idempotency)\.ts$/.test(f) ||
      /^src\/graphql\/(resolvers|routes)\.ts$/.test(f),
  );
  t.same(handlers.filter((f) => f !== 'src/features/ui/routes.ts'), [], 'the front imports no management handler, service or write');
  const actor = importGraph('workers/management.ts');
  t.ok(actor.has('src/management/handlers.ts') && actor.has('src/management/boundary.ts'), 'the actor checks its handlers against the admission table');
  const admission = [...actor].filter(
    (f) =>
      /^src\/auth\/(admission|admission-state|authenticate|key-cache|auth-failures)\.ts$/.test(f) ||
      /^src\/ratelimit\//.test(f) ||
      /^src\/(pool|cluster)\//.test(f) ||
      /^src\/management\/(front-routes|handle|priority)\.ts$/.test(f) ||
      /^src\/graphql\/admit\.ts$/.test(f) ||
      /^src\/http\/(front|uws-front|node-front|uws)\.ts$/.test(f),
  );
  t.same(admission, [], 'the actor builds no admission state, front or pool');
});
