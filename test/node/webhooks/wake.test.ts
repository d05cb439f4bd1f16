/**
 * The outbox wake end to end (features/webhooks/outbox.ts, docs/webhooks.md "Delivery"): a write
 * that queued messages wakes its node's dispatcher after the commit, so its message goes out at
 * once, not at the next poll. The poll is set to a minute here (the other webhook tests poll every
 * 100 ms, which would hide a lost wake): a message that arrives within seconds was sent on the wake.
 */
import t from 'tap';
import { createFlag, startTestNode } from '../../helpers/node.js';
import { until } from '../../helpers/cluster.js';
import { createEndpoint, Receiver, verify, WEBHOOK_ENV } from '../../helpers/webhooks.js';

t.setTimeout(60_000);

t.test('a committed write wakes the dispatcher: its message is sent well before the next poll', async (t) => {
  const rx = await new Receiver().start();
  t.teardown(() => rx.close());
  const n = await startTestNode(t, { env: { ...WEBHOOK_ENV, VEXIL_WEBHOOK_POLL_MS: '60000' } });
  const e = await createEndpoint(n, { url: `${rx.url}/wake`, events: ['flag.*'] });
  t.equal(e.status, 201);
  const secret = (e.body as { secret: string }).secret;
  for (const name of ['woken-1', 'woken-2']) {
    const at = Date.now();
    t.equal((await createFlag(n, name)).status, 201);
    const got = await until(async () => rx.at('/wake').filter((r) => verify(secret, r).data.target.name === name), (g) => g.length >= 1, 10_000);
    t.equal(got.length, 1, `${name}'s message arrived within 10 s of the write, not at the minute's poll`);
    if (got.length > 0) t.comment(`${name}: ${got[0].at - at} ms after the write`);
  }
});

t.test('on the embedded database, a message made pending by SQL from outside (VexilNode.db) is sent at the next poll', async (t) => {
  // An idle dispatcher on PGlite runs no statement until something could have queued a message
  // (storage/poll-gate.ts); SQL through the actor's `query` message is such a thing.
  const rx = await new Receiver().start();
  t.teardown(() => rx.close());
  const n = await startTestNode(t, { env: WEBHOOK_ENV });
  const e = await createEndpoint(n, { url: `${rx.url}/outside`, events: ['flag.*'] });
  t.equal(e.status, 201);
  const secret = (e.body as { secret: string }).secret;
  t.equal((await createFlag(n, 'outside-1')).status, 201);
  const first = await until(async () => rx.at('/outside'), (g) => g.length >= 1, 10_000);
  t.equal(first.length, 1, 'the write\'s message arrived');
  // Several polls (100 ms each) with nothing pending: the dispatcher is idle.
  await new Promise((r) => setTimeout(r, 500));
  const msgId = first[0].headers['webhook-id'];
  const rows = await n.node.db.query<{ id: string }>(
    `update webhook_messages set status = 'pending', next_at = clock_timestamp(), lease_until = null, lease_token = null, finished_at = null
     where msg_id = $1 returning id`,
    [msgId],
  );
  t.equal(rows.length, 1, 'the message is pending again');
  const again = await until(async () => rx.at('/outside'), (g) => g.length >= 2, 5_000);
  t.equal(again.length, 2, 'sent again within 5 s, though nothing on the node queued it');
  if (again.length >= 2) t.equal(verify(secret, again[1]).data.target.name, 'outside-1', 'the same message');
});
