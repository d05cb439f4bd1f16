/**
 * `BodyDeadlines` (src/http/client-timeouts.ts): a body's deadline runs from its head, also when a
 * front starts it late (the uWS front arms it only once a body does not arrive whole with its
 * head), a finished body never expires, and the sweep stops once nothing is pending.
 */
import t from 'tap';
import { BodyDeadlines } from '../../../src/http/client-timeouts.js';

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('a late-started deadline counts from its head, not from when it was started', async (t) => {
  let now = 1_000;
  const d = new BodyDeadlines(40, () => now);
  const expired: string[] = [];
  // Started now with the default `since`: due at 1,040.
  d.start(() => expired.push('fresh'));
  // Started now but its head came at 970: due at 1,010, before the one inserted first.
  d.start(() => expired.push('late'), 970);
  now = 1_020;
  await tick(40);
  t.same(expired, ['late'], 'the earlier head expires although it was inserted second');
  now = 1_050;
  await tick(40);
  t.same(expired, ['late', 'fresh']);
  d.stop();
});

t.test('a body that finishes before its deadline never expires, and each expires once', async (t) => {
  let now = 0;
  const d = new BodyDeadlines(40, () => now);
  let finished = 0;
  let slow = 0;
  const done = d.start(() => finished++);
  d.start(() => slow++);
  done();
  now = 100;
  await tick(40);
  now = 200;
  await tick(40);
  t.equal(finished, 0, 'the finished body is not closed');
  t.equal(slow, 1, 'the slow body is closed once');
  d.stop();
});
