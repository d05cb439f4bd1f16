/** bench/argv.ts: the option reader of the stand-alone micro-benches. */
import t from 'tap';
import { numberArg } from '../../../bench/argv.js';

t.test('numberArg: the number after --name, else the fallback', async (t) => {
  const argv = ['node', 'dist/bench/list-body.js', '--flags', '2500', '--rounds', '3'];
  t.equal(numberArg('flags', 100_000, argv), 2500);
  t.equal(numberArg('rounds', 9, argv), 3);
  t.equal(numberArg('iterations', 1_000_000, argv), 1_000_000, 'absent: the fallback');
  t.equal(numberArg('flags', 7, ['node', 'x', 'flags', '5']), 7, 'only --name counts');
  t.ok(Number.isNaN(numberArg('flags', 7, ['node', 'x', '--flags'])), 'no value: NaN, as Number(undefined)');
});
