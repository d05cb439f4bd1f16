/**
 * The build on this tree (scripts/build.mjs): run again on an unchanged tree it runs no step (so
 * `npm start` serves within seconds), and the real steps' inputs send each edit to its own step:
 * a front-only server file to the server step alone, one the actor runs to the server and the actor's
 * bundle, one the provider bundles too (the engine) to all three, a UI file to the UI. The edits are made in a temp tree holding only the stamped inputs, never here.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import t from 'tap';
// @ts-expect-error: a plain ES module without declarations
import { STEPS, outOfDate, readStamp } from '../../../scripts/build.mjs';
import { projectPath, projectRoot } from '../../../src/util/paths.js';
import { requireFreshDist } from '../../helpers/dist.js';

requireFreshDist();

t.test('a second build on an unchanged tree runs no step', async (t) => {
  const started = Date.now();
  const out = execFileSync(process.execPath, [projectPath('scripts', 'build.mjs')], { cwd: projectRoot(), encoding: 'utf8' });
  const ms = Date.now() - started;
  t.equal(out.trim(), 'build: dist/ is current', 'no step ran');
  t.ok(ms < 5000, `done in ${ms} ms (under 5 s)`);
});

t.test("each edit reruns only the steps that read the file", async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'vexil-build-real-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const stamp = readStamp(projectRoot());
  const copy = (f: string) => {
    mkdirSync(dirname(join(root, f)), { recursive: true });
    cpSync(projectPath(f), join(root, f), { preserveTimestamps: true });
  };
  for (const step of STEPS as { name: string; outputs: string[] }[]) {
    for (const f of Object.keys(stamp.steps[step.name].files)) copy(f);
    for (const o of step.outputs) copy(o);
  }
  copy('dist/.build-stamp.json');
  const stale = () => (outOfDate(root) as { step: string }[]).map((s) => s.step);
  t.same(stale(), [], 'the copy is current');

  const edit = (f: string) => appendFileSync(join(root, f), '\n');
  const restore = (f: string) => copy(f);
  // A server file the provider bundles (the engine, wherever it lives): read from the stamp.
  const bundledByProvider = Object.keys(stamp.steps.provider.files).find((f) => f.startsWith('src/') && !(f in stamp.steps.ui.files));
  t.ok(bundledByProvider, `the provider bundles a server file (${bundledByProvider})`);
  t.ok(bundledByProvider! in stamp.steps.actor.files, 'the actor bundles it too');
  t.notOk('src/node.ts' in stamp.steps.actor.files, "the actor's bundle leaves the front out");
  for (const [file, steps] of [
    ['src/node.ts', ['server']],
    ['workers/management.ts', ['server', 'actor']],
    ['src/management/actor.ts', ['server', 'actor']],
    [bundledByProvider!, ['server', 'actor', 'provider']],
    ['ui/styles.css', ['ui']],
    ['packages/openfeature-provider/src/index.ts', ['server', 'provider']],
  ] as const) {
    edit(file);
    t.same(stale(), steps, `${file}: ${steps.join(' and ')}`);
    restore(file);
  }
  writeFileSync(join(root, 'src', 'brand-new.ts'), 'export {};\n');
  t.same(stale(), ['server'], 'a new file under src/: the server step');
});
