/**
 * The outbox wake (features/webhooks/outbox.ts): this process's dispatcher is woken once per
 * committed transaction that queued messages, however many statements queued them; not by a
 * rollback, and only after the commit. Real transactions on an in-memory PGlite.
 */
import t from 'tap';
import { openPGlite } from '../../../src/storage/pglite.js';
import { messagesQueued, onQueued, outboxTransaction, wake } from '../../../src/features/webhooks/outbox.js';

t.test('woken once per transaction that queued messages', async (t) => {
  const db = await openPGlite(null);
  t.teardown(() => db.close());
  let wakes = 0;
  const off = onQueued(() => wakes++);
  t.teardown(off);

  await outboxTransaction(db, async (tx) => {
    for (let i = 0; i < 5; i++) {
      await tx.query('select 1');
      messagesQueued(tx); // five audit events, each with messages
    }
  });
  t.equal(wakes, 1, 'five statements that queued messages, one transaction: one wake');

  await outboxTransaction(db, async (tx) => void (await tx.query('select 1')));
  t.equal(wakes, 1, 'a transaction that queued nothing wakes nothing');

  await t.rejects(
    outboxTransaction(db, async (tx) => {
      messagesQueued(tx);
      throw new Error('refused');
    }),
    /refused/,
  );
  t.equal(wakes, 1, 'a transaction that rolled back wakes nothing');

  // The wake comes after the commit, not when the statement queued.
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let queuedTx: unknown;
  const a = outboxTransaction(db, async (tx) => {
    messagesQueued(tx);
    queuedTx = tx;
    await gate;
  });
  await new Promise((r) => setTimeout(r, 10));
  t.ok(queuedTx !== undefined, 'A has queued and is open');
  t.equal(wakes, 1, 'no wake while A is open');
  release();
  await a;
  t.equal(wakes, 2, 'A woke the dispatcher once, after its commit');

  wake();
  t.equal(wakes, 3, 'wake(): a test message or a replay wakes at once');
});
