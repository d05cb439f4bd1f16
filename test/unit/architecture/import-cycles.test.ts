/**
 * No import circles in src/, bench/ or workers/: the relative
 * imports of every .ts file there, type-only ones (`import type`) and re-exports
 * (`export … from`) included, form a graph without strongly connected components. A new import
 * that closes a circle fails here, naming the files of the circle. Shared types go to the module
 * that owns them, not behind a dynamic import: `import('./x.js')` counts too.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import t from 'tap';
import { projectPath } from '../../../src/util/paths.js';

const ROOT = projectPath();
const DIRS = ['src', 'bench', 'workers'];

/** Every .ts file (declaration files left out) under `dir`, as absolute paths. */
function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...tsFiles(path));
    else if (path.endsWith('.ts') && !path.endsWith('.d.ts')) out.push(resolve(path));
  }
  return out;
}

/** `import … from './x.js'`, `import type …`, `import './x.js'`, `export … from './x.js'`. */
const STATIC_IMPORT = /^\s*(?:import|export)\s+(?:[^'";]*?from\s+)?['"](\.[^'"]+)['"]/gm;
/** `import('./x.js')` with a literal path. */
const DYNAMIC_IMPORT = /\bimport\(\s*['"](\.[^'"]+)['"]\s*\)/g;

type Graph = Map<string, string[]>;

/** Each file's relative imports that resolve to one of `files`. */
function importGraph(files: string[]): Graph {
  const known = new Set(files);
  const graph: Graph = new Map();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const deps: string[] = [];
    for (const m of [...text.matchAll(STATIC_IMPORT), ...text.matchAll(DYNAMIC_IMPORT)]) {
      const target = resolve(dirname(file), m[1].replace(/\.js$/, '.ts'));
      if (known.has(target)) deps.push(target);
    }
    graph.set(file, deps);
  }
  return graph;
}

/** The strongly connected components of more than one file, and files importing themselves (Tarjan). */
function cycles(graph: Graph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component);
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

t.test('the cycle finder finds circles, type-only and re-export links included', async (t) => {
  const g: Graph = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a', 'd']],
    ['d', []],
    ['e', ['e']],
    ['f', ['d']],
  ]);
  t.same(cycles(g).map((c) => c.sort()), [['a', 'b', 'c'], ['e']], 'a → b → c → a and e → e');
  t.same(cycles(new Map([['x', ['y']], ['y', []]])), [], 'a chain is no circle');

  const text = [
    "import { a } from './a.js';",
    "import type { B } from '../b.js';",
    'import {',
    '  c,',
    '  type C,',
    "} from './c.js';",
    "export { d } from './d.js';",
    "export type { E } from './e.js';",
    "import './f.js';",
    "const g = await import('./g.js');",
    "import { h } from 'node:fs';",
  ].join('\n');
  const specs = [...text.matchAll(STATIC_IMPORT), ...text.matchAll(DYNAMIC_IMPORT)].map((m) => m[1]);
  t.same(specs, ['./a.js', '../b.js', './c.js', './d.js', './e.js', './f.js', './g.js'], 'every relative import form is read');
});

t.test('src/, bench/ and workers/ have no import cycles', async (t) => {
  const files = DIRS.flatMap((d) => tsFiles(projectPath(d)));
  const graph = importGraph(files);
  const rel = (f: string): string => relative(ROOT, f);
  // The walk reads real imports: a type-only link and a re-export are in the graph.
  const edges = (from: string): string[] => (graph.get(projectPath(from)) ?? []).map(rel);
  t.ok(edges('src/http/cors.ts').includes('src/http/handler.ts'), 'a type-only import is an edge (cors.ts → handler.ts)');
  t.ok(edges('src/engine/index.ts').includes('src/engine/compiled.ts'), 'a re-export is an edge (engine/index.ts → compiled.ts)');
  t.ok(edges('bench/run.ts').includes('bench/registry.ts'), 'bench is read (run.ts → registry.ts)');
  t.ok(files.some((f) => rel(f).startsWith('workers/')), 'workers are read');

  const found = cycles(graph).map((c) => c.map(rel).sort());
  t.same(found, [], found.map((c) => `import cycle among: ${c.join(', ')}`).join('\n') || 'no import cycle');
});
