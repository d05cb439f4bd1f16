/**
 * bench/insights.ts, the `insights-provider` row: CPU and wall ns per resolve of each side, what
 * counting adds, and the check of the provider's own counters: counting on sent the node a count
 * of every resolve of its side, none dropped; counting off sent and dropped none. (The row's
 * rounds themselves are bench/cpu-pairs.ts, tested in cpu-pairs.test.ts.)
 */
import t from 'tap';
import { providerRow } from '../../../bench/insights.js';

const pairs = [
  { offNs: 200, onNs: 210 },
  { offNs: 220, onNs: 224 },
  { offNs: 210, onNs: 215 },
];
const wall = pairs.map((p) => ({ offNs: p.offNs * 2, onNs: p.onNs * 2 }));
const quiet = { metricsSent: 0, metricsDropped: 0 };

t.test('every resolve of the counting side counted, none of the other: ok, with its figures', async (t) => {
  const row = providerRow(pairs, wall, 0.5, [1000, 900], [quiet, { metricsSent: 900, metricsDropped: 0 }]);
  t.equal(row.name, 'insights-provider');
  t.equal(row.status, 'ok');
  const notes = row.notes!.join('\n');
  t.match(notes, /CPU ns per resolve: off 210\.0 .*; on 215\.0 /);
  t.match(notes, /counting adds 5\.0 ns per resolve \(4\.0–10\.0\), 2\.4 % of a resolve/);
  t.match(notes, /by wall time instead .*: off 420\.0, on 430\.0 ns per resolve/);
  t.match(notes, /counted 900 of 900 resolves/);
  t.match(row.description, /3 pairs of 0\.5 s a side, taken in alternating 5 ms slices/);
  t.equal((row.extra?.paired as { ratios: number[] }).ratios.length, 3);
});

t.test('a count missing, dropped, or taken with counting off: failed', async (t) => {
  t.equal(providerRow(pairs, wall, 0.5, [1000, 900], [quiet, { metricsSent: 899, metricsDropped: 0 }]).status, 'failed');
  t.equal(providerRow(pairs, wall, 0.5, [1000, 900], [quiet, { metricsSent: 900, metricsDropped: 1 }]).status, 'failed');
  const off = providerRow(pairs, wall, 0.5, [1000, 900], [{ metricsSent: 1, metricsDropped: 0 }, { metricsSent: 900, metricsDropped: 0 }]);
  t.equal(off.status, 'failed');
  t.match(off.error, /counting off 1/);
});
