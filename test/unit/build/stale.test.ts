/**
 * The build's staleness rule (scripts/build.mjs), on small file trees in a temp dir: what makes a
 * step out of date, the message the node-starting suites refuse with (test/helpers/dist.ts), and a
 * build that runs only the steps whose inputs changed.
 */
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import t, { type Test } from 'tap';
// @ts-expect-error: a plain ES module without declarations
import { build, outOfDate } from '../../../scripts/build.mjs';
import { distStaleness } from '../../helpers/dist.js';

/** A temp tree holding `files` (path → content), removed with the test. */
function tree(t: Test, files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'vexil-build-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  for (const [f, body] of Object.entries(files)) write(root, f, body);
  return root;
}

function write(root: string, file: string, body: string): void {
  mkdirSync(dirname(join(root, file)), { recursive: true });
  writeFileSync(join(root, file), body);
}

/** A step whose command writes its output (and, for a bundling step, the file its bundle took in). */
const copyStep = (name: string, inputs: string[], output: string, bundledFrom?: string) => ({
  name,
  inputs,
  outputs: [output],
  ...(bundledFrom ? { bundled: `dist/.${name}-inputs.json` } : {}),
  commands: (root: string) => {
    const out = join(root, output);
    const bundled = bundledFrom ? ` && echo '${JSON.stringify([join(root, bundledFrom)])}' > '${join(root, `dist/.${name}-inputs.json`)}'` : '';
    return [['sh', '-c', `mkdir -p '${dirname(out)}' && date +%s%N > '${out}'${bundled}`]];
  },
});

const STEPS = [{ ...copyStep('server', ['src', 'workers'], 'dist/src/main.js'), sources: /\.ts$/ }, copyStep('ui', ['ui'], 'dist/ui/index.html', 'src/shared.ts')];
const SOURCES = { 'src/main.ts': 'main', 'src/shared.ts': 'shared', 'workers/w.ts': 'w', 'ui/app.tsx': 'app' };
const quiet = { log: () => {} };
const steps = (list: { step: string }[]) => list.map((s) => s.step);

t.test('a tree never built: every step, and the message says to build', async (t) => {
  const root = tree(t, SOURCES);
  t.same(steps(outOfDate(root, STEPS)), ['server', 'ui']);
});

t.test('built, then unchanged: nothing to do; a second build runs no step', async (t) => {
  const root = tree(t, SOURCES);
  t.same(build(root, STEPS, quiet), ['server', 'ui'], 'the first build runs both steps');
  t.same(outOfDate(root, STEPS), [], 'current');
  t.same(build(root, STEPS, quiet), [], 'the second build runs nothing');
});

t.test('a changed source names itself, and only its steps run', async (t) => {
  const root = tree(t, SOURCES);
  build(root, STEPS, quiet);
  appendFileSync(join(root, 'src/main.ts'), '// edited');
  t.same(outOfDate(root, STEPS), [{ step: 'server', file: 'src/main.ts', reason: 'src/main.ts changed' }]);
  t.same(build(root, STEPS, quiet), ['server'], 'the server step alone');
  t.same(outOfDate(root, STEPS), []);

  appendFileSync(join(root, 'src/shared.ts'), '// edited');
  t.same(steps(outOfDate(root, STEPS)), ['server', 'ui'], 'a file the ui bundle took in is an input of the ui step too');
  appendFileSync(join(root, 'ui/app.tsx'), '// edited');
  build(root, STEPS, quiet);
  appendFileSync(join(root, 'ui/app.tsx'), '// again');
  t.same(build(root, STEPS, quiet), ['ui'], 'a ui file: the ui step alone');
});

t.test('the message the node suites refuse with names the newer file', async (t) => {
  const root = tree(t, SOURCES);
  t.equal(distStaleness(root, STEPS), 'dist/ is out of date (dist/src/main.js is missing): run npm run build', 'never built');
  build(root, STEPS, quiet);
  t.equal(distStaleness(root, STEPS), null, 'current');
  appendFileSync(join(root, 'src/main.ts'), '// edited');
  t.equal(distStaleness(root, STEPS), 'dist/ is older than src/main.ts: run npm run build');
});

t.test('touched but not changed: current (a checkout that only rewrites mtimes builds nothing)', async (t) => {
  const root = tree(t, SOURCES);
  build(root, STEPS, quiet);
  const later = new Date(Date.now() + 60_000);
  utimesSync(join(root, 'src/main.ts'), later, later);
  t.same(outOfDate(root, STEPS), []);
  t.same(build(root, STEPS, quiet), []);
});

t.test('a source added or removed, or an output deleted, makes its step stale', async (t) => {
  const root = tree(t, SOURCES);
  build(root, STEPS, quiet);
  write(root, 'workers/new.ts', 'new');
  t.same(outOfDate(root, STEPS), [{ step: 'server', file: 'workers/new.ts', reason: 'workers/new.ts changed' }], 'added');
  build(root, STEPS, quiet);
  rmSync(join(root, 'workers/new.ts'));
  t.same(outOfDate(root, STEPS), [{ step: 'server', file: 'workers/new.ts', reason: 'workers/new.ts was removed' }], 'removed');
  build(root, STEPS, quiet);
  rmSync(join(root, 'dist/ui/index.html'));
  t.match(outOfDate(root, STEPS), [{ step: 'ui', reason: 'dist/ui/index.html is missing' }], 'output deleted');
});

t.test('files its `sources` pattern leaves out (results written under a source folder) are not inputs', async (t) => {
  const root = tree(t, SOURCES);
  build(root, STEPS, quiet);
  write(root, 'src/results/run.json', '{}');
  t.same(outOfDate(root, STEPS), []);
  write(root, 'ui/notes.md', 'a ui step without `sources` reads every file under ui/');
  t.same(steps(outOfDate(root, STEPS)), ['ui']);
});

t.test('a failed step is not stamped: it runs again next time', async (t) => {
  const root = tree(t, SOURCES);
  const failing = { ...STEPS[0], commands: () => [['sh', '-c', 'exit 3']] };
  t.throws(() => build(root, [failing], quiet), /build: server failed: sh -c exit 3 exited 3/);
  t.same(steps(outOfDate(root, [failing])), ['server']);
  t.notOk(JSON.parse(readFileSync(join(root, 'dist/.build-stamp.json'), 'utf8')).steps.server, 'no stamp for the failed step');
});
