/**
 * storage/poll-gate.ts: on PostgreSQL every poll reads (other nodes write); on the embedded
 * PGlite a poll reads only after a touch (a commit on this node the poller is told of) or an
 * outside write (SQL from `VexilNode.db`), which touches every gate of that database and no other.
 */
import t from 'tap';
import type { Database } from '../../../src/storage/database.js';
import { outsideWrite, pollGate, PollGate } from '../../../src/storage/poll-gate.js';

const fakeDb = (kind: 'pglite' | 'postgres'): Database => ({
  kind,
  query: async () => [],
  exec: async () => {},
  transaction: async (fn) => fn({ query: async () => [], exec: async () => {} }),
  close: async () => {},
});

t.test('PostgreSQL: every poll reads, touched or not', async (t) => {
  const gate = pollGate(fakeDb('postgres'));
  t.equal(gate.everyPoll, true);
  for (let i = 0; i < 5; i++) t.equal(gate.shouldRead(), true, `poll ${i}`);
});

t.test('PGlite: the first poll reads, then none until a touch; one read per touch', async (t) => {
  const gate = pollGate(fakeDb('pglite'));
  t.equal(gate.everyPoll, false);
  t.equal(gate.shouldRead(), true, 'the first poll reads (nothing read yet)');
  t.equal(gate.shouldRead(), false, 'the next reads nothing');
  t.equal(gate.shouldRead(), false, 'nor the one after');
  gate.touch();
  gate.touch();
  t.equal(gate.shouldRead(), true, 'after touches, one read');
  t.equal(gate.shouldRead(), false, 'and only one');
});

t.test('outsideWrite touches every gate of its database, and no other database\'s', async (t) => {
  const db = fakeDb('pglite');
  const other = fakeDb('pglite');
  const a = pollGate(db);
  const b = pollGate(db);
  const c = pollGate(other);
  for (const g of [a, b, c]) g.shouldRead();
  outsideWrite(db);
  t.equal(a.shouldRead(), true, 'gate a reads');
  t.equal(b.shouldRead(), true, 'gate b reads');
  t.equal(c.shouldRead(), false, "the other database's gate does not");
  outsideWrite(fakeDb('pglite'));
  t.equal(a.shouldRead(), false, 'a database without gates touches nothing here');
});

t.test('a gate made directly follows the same rules', async (t) => {
  const g = new PollGate(false);
  t.equal(g.shouldRead(), true);
  t.equal(g.shouldRead(), false);
  t.equal(new PollGate(true).shouldRead(), true);
});
