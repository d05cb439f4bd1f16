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
