/**
 * bench/counting-cost.ts: the figures of the in-process insights rows (bench/insights-engine.ts)
 * from interleaved rounds without and with counting, and the share of an HTTP request read from
 * the HTTP rows of the same run.
 */
import t from 'tap';
import { costNotes, countingCost, httpCpuUsPerEval, httpShare, pairedCostRow, pairedExtra } from '../../../bench/counting-cost.js';
import type { Measurement } from '../../../bench/harness.js';

const near = (x: number, y: number): boolean => Math.abs(x - y) < 1e-12;

t.test('countingCost: ratio, cost and share per pair, then median and min–max', async (t) => {
  const c = countingCost([
    { offNs: 100, onNs: 110 },
    { offNs: 200, onNs: 200 },
    { offNs: 100, onNs: 105 },
  ]);
  t.equal(c.pairs, 3);
  t.equal(c.offNs, 100, 'median of the off rounds');
  t.equal(c.onNs, 110, 'median of the on rounds');
  t.equal(c.costNs.median, 5);
  t.equal(c.costNs.min, 0);
  t.equal(c.costNs.max, 10);
  t.ok(near(c.engineShare.median, 0.05), 'share: on ÷ off − 1');
  t.ok(near(c.engineShare.max, 0.1));
  t.equal(c.engineShare.min, 0);
  t.equal(c.ratio.median, 100 / 105, 'evaluations/s on ÷ off = off ns ÷ on ns');
  t.equal(c.ratio.max, 1);
  t.equal(c.ratio.min, 100 / 110);
  const even = countingCost([
    { offNs: 100, onNs: 102 },
    { offNs: 100, onNs: 104 },
  ]);
  t.equal(even.costNs.median, 3, 'an even count: the mean of the middle two');
  t.equal(countingCost([{ offNs: 100, onNs: 95 }]).costNs.median, -5, 'a pair where counting was faster stays negative (noise shows)');
});

t.test('countingCost refuses what is no measurement', async (t) => {
  t.throws(() => countingCost([]), RangeError);
  t.throws(() => countingCost([{ offNs: 0, onNs: 1 }]), /positive time/);
  t.throws(() => countingCost([{ offNs: 1, onNs: NaN }]), /positive time/);
  t.throws(() => countingCost([{ offNs: Infinity, onNs: 1 }]), /positive time/);
});

const pairedRow = (name: string, cpuUsPerEval: number[], status: Measurement['status'] = 'ok'): Measurement => ({
  name,
  description: '',
  status,
  extra: { paired: { aim: 0.97, a: { name: 'off', rps: [], cpuUsPerEval }, b: { name: 'on', rps: [], cpuUsPerEval: [] } } },
});

const loadRow = (name: string, cpuUsPerRequest: number, evaluationsPerRequest?: number): Measurement => ({
  name,
  description: '',
  status: 'ok',
  evaluationsPerRequest,
  server: { cpuSec: 1, cpuUtilization: 1, cpuPerNode: [1], cpuUsPerRequest, peakRssMiB: [1] },
});

t.test('httpCpuUsPerEval: the first named row measured in this run', async (t) => {
  const rows = [loadRow('rest-front', 30), pairedRow('insights-rest', [20, 40, 25]), loadRow('ofrep-bulk', 500, 50), pairedRow('insights-ofrep-bulk', [NaN, NaN])];
  t.same(httpCpuUsPerEval(rows, ['insights-rest', 'rest-front']), { row: 'insights-rest', cpuUsPerEval: 25 }, "a paired row: the median of its counting-off slices");
  t.same(httpCpuUsPerEval(rows, ['rest-front', 'insights-rest']), { row: 'rest-front', cpuUsPerEval: 30 }, 'the order of the names decides');
  t.same(httpCpuUsPerEval(rows, ['insights-ofrep-bulk', 'ofrep-bulk']), { row: 'ofrep-bulk', cpuUsPerEval: 10 }, 'a paired row without a figure is passed over; a load row is per evaluation');
  t.equal(httpCpuUsPerEval([pairedRow('insights-rest', [20], 'failed')], ['insights-rest']), undefined, 'a failed row is no figure');
  t.equal(httpCpuUsPerEval(rows, ['insights-graphql-batch']), undefined, 'none measured');
});

t.test('httpShare: ns per evaluation against µs per evaluation', async (t) => {
  t.equal(httpShare(5, { row: 'insights-rest', cpuUsPerEval: 25 }), 0.0002);
  t.equal(httpShare(-5, { row: 'insights-rest', cpuUsPerEval: 25 }), -0.0002);
});

t.test('costNotes, pairedExtra and pairedCostRow: the notes and figures every in-process row carries', async (t) => {
  const pairs = [
    { offNs: 200, onNs: 210 },
    { offNs: 220, onNs: 220 },
  ];
  const wall = [
    { offNs: 300, onNs: 330 },
    { offNs: 400, onNs: 400 },
  ];
  const n = costNotes('resolve', 'a resolve', pairs, wall);
  t.equal(n.cpu, 'CPU ns per resolve: off 210.0 (rounds: 200.0, 220.0); on 215.0 (rounds: 210.0, 220.0)');
  t.equal(n.cost, 'on ÷ off: median 97.6 % of resolves/s (pairs 95.2 %–100.0 %); counting adds 5.0 ns per resolve (0.0–10.0), 2.5 % of a resolve (0.0 %–5.0 %)');
  t.match(n.wall, /^by wall time instead .*: off 350\.0, on 365\.0 ns per resolve, on ÷ off median 95\.5 % \(90\.9 %–100\.0 %\)$/);
  const e = pairedExtra(pairs, wall);
  t.same(e.ratios, [200 / 210, 1]);
  t.same(e.a.cpuNsPerEval, [200, 220]);
  t.same(e.b.wallNsPerEval, [330, 400]);
  t.same(e.b.rps, [1e9 / 210, 1e9 / 220]);
  // pairedCostRow: all of it from one place, with `versus` (on ÷ off, and the CPU share counting adds).
  const r = pairedCostRow('x (counting off)', 'resolve', 'a resolve', pairs, wall);
  t.same(r.cost, countingCost(pairs));
  t.same(r.notes, n);
  t.same(r.versus, { name: 'x (counting off)', rps: r.cost.ratio.median, cpuPerRequest: 1 + r.cost.engineShare.median });
  t.ok(near(r.versus.rps, (200 / 210 + 1) / 2) && near(r.versus.cpuPerRequest, 1.025));
  t.same(r.extra, { paired: e, countingCost: countingCost(pairs), countingCostByWall: countingCost(wall) });
});
