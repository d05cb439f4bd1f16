/**
 * Persistence on the embedded default (PGlite on disk): everything written survives a stop and a
 * start on the same data directory, and a failed request leaves no partial rows behind.
 */
import { rmSync } from 'node:fs';
import t from 'tap';
import { pgliteCopy, startTestNode } from '../../helpers/node.js';
import { checkFailedWritesChangeNothing, checkKeyStates, checkObservation, observe, writeScenario } from '../../helpers/storage-scenario.js';

// Several real nodes per file (PGlite start-up is seconds each): more than tap's default 120 s on a busy machine.
t.setTimeout(300_000);

const env = { VEXIL_RATE_LIMIT_MGMT: '100000', VEXIL_RATE_LIMIT_EVAL: '100000' };

t.test('flags, configurations and keys survive a restart on the same data directory', async (t) => {
  const dataDir = await pgliteCopy();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const first = await startTestNode(t, { dataDir, env });
  const scenario = await writeScenario(first);
  const before = await observe(first, scenario);
  checkObservation(t, before);
  await first.close();

  const second = await startTestNode(t, { dataDir, adminKey: scenario.adminKey, env });
  const after = await observe(second, scenario);
  t.same(after.list, before.list, 'flag list identical');
  t.same(after.flags, before.flags, 'every flag with its configurations identical');
  t.same(after.keys, before.keys, 'key records identical');
  t.same(after.evaluations, before.evaluations, 'every evaluation identical');
  await checkKeyStates(t, second, scenario);
  t.equal((await second.node.db.query(`select id from organizations`)).length, 1, 'no second bootstrap');

  // Writes after the restart persist as well (the store is the same, not a read-only copy).
  t.equal((await second.req('PUT', '/api/flags/checkout', { key: scenario.adminKey, body: { description: 'after restart' } })).status, 200);
  await second.close();
  const third = await startTestNode(t, { dataDir, adminKey: scenario.adminKey, env });
  t.equal((await third.req('GET', '/api/flags/checkout', { key: scenario.readKey })).body.description, 'after restart');
  t.same((await observe(third, scenario)).evaluations, before.evaluations, 'a description change does not change evaluations');
});

t.test('a failing request changes nothing (PGlite)', async (t) => {
  const n = await startTestNode(t, { env });
  await checkFailedWritesChangeNothing(t, n);
});
