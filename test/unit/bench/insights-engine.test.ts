/**
 * bench/insights-engine.ts, the in-process rows of `npm run bench -- insights`: the workloads run
 * the server's own evaluation functions over every flag of the bulk (all matching, as ofrep-bulk),
 * the counting-on side counts every evaluation exactly through the node's counters and drains
 * (InsightsForwarder) while the off side counts none, and the rows carry the share of a request
 * when this run measured the HTTP rows. No figure is asserted: only that the rows are what they say.
 */
import t from 'tap';
import type { Measurement } from '../../../bench/harness.js';
import { pairOf } from '../../../bench/cpu-pairs.js';
import { EngineSide, engineData, engineRows, workloads } from '../../../bench/insights-engine.js';
import { OFREP_BULK_FLAGS } from '../../../bench/scenarios.js';
import { bulkAnswers } from '../../../src/evaluation/bulk.js';

t.test('the data: every flag of the bulk evaluated, all matching, as the ofrep-bulk scenario', async (t) => {
  const d = engineData();
  t.equal(d.flags.length, OFREP_BULK_FLAGS);
  const answers = JSON.parse(`[${bulkAnswers(d.snapshot, d.flags, d.bulks[7], Date.now(), null)}]`) as { key: string; value: unknown; variant: string }[];
  t.equal(answers.length, OFREP_BULK_FLAGS);
  t.ok(answers.every((a) => a.value === true && a.variant === 'on'), 'the production rule country == NL matched for every flag');
  t.same(workloads(d).map((w) => w.key), ['bulk', 'single']);
});

t.test('a side counts every evaluation with insights on, none with them off, and drains on its busy time', async (t) => {
  const d = engineData(5);
  const on = new EngineSide(true, 1);
  const off = new EngineSide(false, 1);
  t.not(on.counts.insights, null);
  t.equal(off.counts.insights, null, "VEXIL_INSIGHTS=off's counters: no InsightsCounter");
  for (const w of workloads(d)) {
    for (const s of [off, on]) {
      const r = s.round(w, 0.02);
      t.ok(r.evaluations > 0 && r.wallNs > 0 && r.cpuNs >= 0, `${w.key}: a round's evaluations and times`);
    }
  }
  const w = workloads(d)[1];
  const [a, b] = pairOf([(sec) => off.round(w, sec), (sec) => on.round(w, sec)], 0.02);
  t.ok(a.wallNs >= 0.02e9 && b.wallNs >= 0.02e9, 'a pair: each side at least its seconds, in slices');
  t.ok(a.evaluations > 0 && b.evaluations > 0);
  on.close();
  off.close();
  t.ok(on.evaluations > 0);
  t.equal(on.counted, on.evaluations, 'every evaluation counted once, drained in full');
  t.ok(on.posts >= 2, `drained during the rounds, not only at close (${on.posts} posts)`);
  t.equal(off.counted, 0);
  t.equal(off.posts, 0, 'nothing to send without insights');
});

const pairedRow = (name: string, cpuUsPerEval: number): Measurement => ({
  name,
  description: '',
  status: 'ok',
  extra: { paired: { aim: 0.97, a: { name: 'off', rps: [1], cpuUsPerEval: [cpuUsPerEval] }, b: { name: 'on', rps: [1], cpuUsPerEval: [cpuUsPerEval] } } },
});

t.test('the rows: paired figures, the exact count, and the share of a request when the HTTP rows ran', async (t) => {
  const rows = await engineRows({ pairs: 2, sec: 0.01, batch: 100, earlier: [pairedRow('insights-rest', 20), pairedRow('insights-ofrep-bulk', 1)] });
  t.same(rows.map((r) => [r.name, r.status]), [['insights-engine-bulk', 'ok'], ['insights-engine-single', 'ok']]);
  const [bulk, single] = rows;
  const paired = bulk.extra?.paired as { ratios: number[]; a: { cpuNsPerEval: number[]; wallNsPerEval: number[] } };
  t.equal(paired.ratios.length, 2, 'one ratio per pair');
  t.equal(paired.a.cpuNsPerEval.length, 2);
  t.equal(paired.a.wallNsPerEval.length, 2);
  t.match(bulk.notes?.join('\n'), /OFREP bulk \(insights-ofrep-bulk, counting off\): 50\.0 µs server CPU per request of 50 evaluations/);
  t.match(bulk.notes?.join('\n'), /counted (\d+) of \1 evaluations/, 'the check of the count is in the row');
  t.match(single.notes?.join('\n'), /REST \(insights-rest, counting off\): 20\.0 µs server CPU per request of 1 evaluation;/);
  t.match(single.notes?.join('\n'), /100-alias GraphQL: no HTTP row in this run/);
  const targets = single.extra?.targets as { target: string; met: boolean }[];
  t.equal(targets.length, 1, 'a target only where an HTTP row gives the request');
  t.match(targets[0].target, /REST request's server CPU \(insights-engine-single ÷ insights-rest\)/);
  const only = await engineRows({ pairs: 1, sec: 0.01, batch: 100, earlier: [], only: ['single'] });
  t.same(only.map((r) => r.name), ['insights-engine-single']);
  t.same(only[0].extra?.targets, [], 'no HTTP row, no target');
});
