/**
 * The benchmark runner's options (bench/options.ts): `--pairs N` is a real option of
 * `npm run bench`, listed by usage() and checked once when the arguments are read, with
 * VEXIL_BENCH_PAIRS as its fallback (checked the same way); without either, each paired scenario
 * keeps its own default (undefined here).
 */
import t from 'tap';
import { parseArgs, usage } from '../../../bench/options.js';

t.test('--pairs N and VEXIL_BENCH_PAIRS', async (t) => {
  t.equal(parseArgs([], {}).pairs, undefined, 'neither: the scenario decides');
  t.equal(parseArgs(['--pairs', '3'], {}).pairs, 3);
  t.equal(parseArgs(['--pairs=7', '--scenario', 'insights'], {}).pairs, 7, '--pairs=N');
  t.equal(parseArgs(['insights'], { VEXIL_BENCH_PAIRS: '4' }).pairs, 4, 'from the environment');
  t.equal(parseArgs(['--pairs', '2'], { VEXIL_BENCH_PAIRS: '9' }).pairs, 2, 'the option wins over the environment');
  t.equal(parseArgs([], { VEXIL_BENCH_PAIRS: '' }).pairs, undefined, 'an empty variable is no value');
  for (const bad of ['0', '-1', '2.5', 'x', '1001', '']) {
    t.throws(() => parseArgs(['--pairs', bad], {}), /--pairs needs a (whole )?number in \[1, 1000\]/, `--pairs ${JSON.stringify(bad)} is refused`);
  }
  t.throws(() => parseArgs(['--pairs'], {}), /--pairs needs/, 'a missing value is refused');
  for (const bad of ['0', 'five', '3.5']) {
    t.throws(() => parseArgs(['insights'], { VEXIL_BENCH_PAIRS: bad }), /VEXIL_BENCH_PAIRS needs/, `VEXIL_BENCH_PAIRS=${bad} is refused before anything runs`);
  }
  t.match(usage(), /--pairs N .*insights, context-sample, paired, rest-vs-bare/, 'usage() lists it, with every scenario that takes it');
});
