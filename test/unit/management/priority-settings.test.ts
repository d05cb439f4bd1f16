/**
 * The management actor's scheduling settings (README.md, "Configuration"; docs/cluster.md,
 * "Management never starves"): a nice value it keeps, 10 by default, in SCHED_OTHER; `low` is the
 * old name of `nice`; `idle` is opt-in. The value the front gives the actor's process is read back
 * there (transport.ts `actorNice`).
 */
import t, { type Test } from 'tap';
import { ConfigError, loadConfig } from '../../../src/config.js';
import { ACTOR_NICE, actorNice } from '../../../src/management/transport.js';

t.test('defaults: nice 10 in SCHED_OTHER, never SCHED_IDLE', async (t) => {
  const c = loadConfig({});
  t.same({ priority: c.managementPriority, nice: c.managementNice }, { priority: 'nice', nice: 10 });
  t.equal(ACTOR_NICE, c.managementNice, "the actor's own default is the setting's");
});

function refused(t: Test, env: Record<string, string>, variable: string): void {
  try {
    loadConfig(env);
    t.fail(`${JSON.stringify(env)} should be refused`);
  } catch (err) {
    t.ok(err instanceof ConfigError && (err as Error).message.includes(variable), `${JSON.stringify(env)} is refused, naming ${variable}`);
  }
}

t.test('VEXIL_MANAGEMENT_PRIORITY and VEXIL_MANAGEMENT_NICE', async (t) => {
  t.equal(loadConfig({ VEXIL_MANAGEMENT_PRIORITY: 'low' }).managementPriority, 'nice', '`low` is the old name of `nice`');
  t.equal(loadConfig({ VEXIL_MANAGEMENT_PRIORITY: 'idle' }).managementPriority, 'idle');
  t.equal(loadConfig({ VEXIL_MANAGEMENT_NICE: '12' }).managementNice, 12);
  for (const bad of ['0', '20', '-1', '2.5', 'ten']) refused(t, { VEXIL_MANAGEMENT_NICE: bad }, 'VEXIL_MANAGEMENT_NICE');
  refused(t, { VEXIL_MANAGEMENT_PRIORITY: 'realtime' }, 'VEXIL_MANAGEMENT_PRIORITY');
});

t.test("the actor reads its nice value from its argument, its default otherwise", async (t) => {
  t.equal(actorNice('12'), 12);
  t.equal(actorNice(undefined), ACTOR_NICE);
  for (const bad of ['', '-3', '20', 'x', '1.5']) t.equal(actorNice(bad), ACTOR_NICE, `${JSON.stringify(bad)}: the default`);
});
