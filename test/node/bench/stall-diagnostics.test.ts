/**
 * The bench's two diagnostics for telling a stall of the node from a neighbour's
 * (docs/benchmarks.md, "Finding a stall"):
 * - `VEXIL_BENCH_SLOW_LOG`: the phased generator writes each request slower than
 *   `VEXIL_BENCH_SLOW_MS` with its scheduled send (epoch ms) and phase;
 * - `outsideSample`/`outsideDelta` (bench/proc.ts): processes started and CPU used outside a set of
 *   process trees, a short-lived process counted under the parent that reaped it.
 * Against a local server and real processes: what is tested is the bench's own bookkeeping.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { outsideDelta, outsideSample } from '../../../bench/proc.js';
import { requireFreshDist } from '../../helpers/dist.js';
import { until } from '../../helpers/proc.js';
import { projectPath } from '../../../src/util/paths.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

t.test('the slow log: every request over the threshold, with its send time and phase, and no other', async (t) => {
  requireFreshDist();
  // The built generator: it starts itself again as a child (`node dist/bench/load.js --json`).
  const { runLoadInChild } = (await import(pathToFileURL(projectPath('dist', 'bench', 'load.js')).href)) as typeof import('../../../bench/load.js');
  // Every request of the `slow` phase waits 100 ms; the `fast` phase's are answered at once. The
  // threshold (60 ms) is above what a busy test machine adds to a fast answer (a stall of 20-50 ms
  // is common on the CI VM), so no request of a fast phase is logged for the machine's sake.
  let slow = false;
  const server = createServer((_q, res) => {
    const end = (): void => void res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' }).end('ok');
    if (slow) setTimeout(end, 100);
    else end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const dir = mkdtempSync(path.join(tmpdir(), 'vexil-slow-log-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'slow.log');
  const saved = { log: process.env.VEXIL_BENCH_SLOW_LOG, ms: process.env.VEXIL_BENCH_SLOW_MS };
  process.env.VEXIL_BENCH_SLOW_LOG = file;
  process.env.VEXIL_BENCH_SLOW_MS = '60';
  t.teardown(() => {
    for (const [k, v] of [['VEXIL_BENCH_SLOW_LOG', saved.log], ['VEXIL_BENCH_SLOW_MS', saved.ms]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  let slowFrom = 0;
  let slowTo = 0;
  const result = await runLoadInChild({ url, connections: 4, durationSec: 30, rate: 200, phases: true }, undefined, (control) => {
    void (async () => {
      // The first requests open the generator's connections and run its code cold: on a busy
      // machine they can be slow for that alone. They are a phase of their own, left out below.
      control.phase('warmup');
      await sleep(300);
      control.phase('fast#1');
      await sleep(500);
      slow = true;
      slowFrom = Date.now();
      control.phase('slow#1');
      await sleep(500);
      control.phase('fast#2');
      // Requests of the slow phase still in flight are slow too: they count in `slow#1` (their send time).
      await sleep(100);
      slowTo = Date.now();
      slow = false;
      await sleep(400);
      control.end();
    })();
  });
  const phases = result.phases ?? {};
  t.ok(phases['slow#1'].requests > 50, 'the slow phase sent requests');
  const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { at: number; ms: number; phase: string });
  const byPhase = (p: string): number => lines.filter((l) => l.phase === p).length;
  t.ok(byPhase('slow#1') >= phases['slow#1'].requests - 8, `nearly every request of the slow phase is logged (${byPhase('slow#1')} of ${phases['slow#1'].requests})`);
  t.ok(lines.every((l) => l.ms > 60), 'only requests over VEXIL_BENCH_SLOW_MS are logged');
  t.same(lines.filter((l) => l.phase === 'fast#1').map((l) => [l.at - slowFrom, l.ms]), [], 'none of the first fast phase, whose answers came at once (offset from the slow stretch, ms)');
  // Send times are wall-clock (epoch ms), so they line up with the server's logs: none well before
  // the slow stretch began (a generator running late may label a request scheduled just before it
  // with the new phase), none after the run ended. A request sent just after the server turned fast
  // again can still be slow, queued behind the stretch's backlog (4 connections, 100 ms answers,
  // 200 sends a second), and on a busy machine the backlog takes more than a few ms to drain: the
  // upper bound is the run's end (slowTo + 400 ms) with room for the generator to hear of it.
  const outside = lines.filter((l) => l.phase !== 'warmup' && (l.at < slowFrom - 250 || l.at > slowTo + 1000));
  t.same(outside.map((l) => l.at - slowFrom), [], 'each send time falls at the slow stretch or its backlog, in epoch ms (offsets from its start)');
});

t.test('outside the bench: processes started and their CPU, a short-lived one under its parent', async (t) => {
  if (process.platform !== 'linux') {
    t.skip('reads /proc');
    return;
  }
  const ours = new Set([process.pid]);
  const before = outsideSample(ours);
  t.notOk(before.cpu.has(process.pid), 'a process of ours is left out');
  t.ok(before.cpu.has(1), 'a process that is not ours is counted');
  // A shell outside our set starts a process that burns about 300 ms of CPU and exits, then the
  // shell sleeps: the burner is gone by the second sample, its CPU in the shell's reaped time.
  const shell = spawn('sh', ['-c', `"${process.execPath}" -e "const e = Date.now() + 300; while (Date.now() < e);"; echo done; sleep 5`], { stdio: ['ignore', 'pipe', 'ignore'] });
  t.teardown(() => shell.kill('SIGKILL'));
  let out = '';
  shell.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  t.ok(await until(() => out.includes('done'), 10_000), 'the burner ran and exited');
  const after = outsideSample(ours);
  const d = outsideDelta(before, after);
  t.ok(d.forks >= 2, `the processes started are counted (${d.forks})`);
  const sh = d.top.find(([name]) => name === 'sh');
  t.ok(sh !== undefined && sh[1] >= 200, `the exited burner's CPU counts under the shell that reaped it (${sh?.[1].toFixed(0)} ms)`);
  t.ok(d.cpuMs >= (sh?.[1] ?? Infinity), 'the total includes it');
  // The same stretch with the shell counted as ours: its CPU leaves the figure.
  const mine = outsideDelta(before, outsideSample(new Set([process.pid, shell.pid ?? -1])));
  t.notOk(mine.top.some(([name, ms]) => name === 'sh' && ms >= 200), 'a process in the set is not counted');
});
