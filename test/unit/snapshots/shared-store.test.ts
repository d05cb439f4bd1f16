/**
 * The shared snapshot store (src/snapshots/shared-store.ts) and the apply rules
 * (src/snapshots/apply-rules.ts), pure: no I/O, no threads. The writer and the readers run in one
 * thread here over the same SharedArrayBuffers the workers would share.
 */
import t from 'tap';
import { compileFlag, evaluateFlag, type OrgSnapshot } from '../../../src/engine/index.js';
import { replaces, serves, stepFor } from '../../../src/snapshots/apply-rules.js';
import { FlagCache, SharedStoreReader, SharedStoreWriter, type StoreMessage } from '../../../src/snapshots/shared-store.js';
import type { Flag, FlagConfig } from '../../../src/domain/types.js';
import { config, flag, org, req, rule, snap, NOW } from '../../helpers/engine-fixtures.js';

function fixture(n: number, version = 5) {
  const flags: Flag[] = [];
  const configs: Record<string, FlagConfig[]> = {};
  for (let i = 0; i < n; i++) {
    const f = flag({ name: `f${i}`, dependencies: i > 0 && i % 7 === 0 ? [{ flag: 'f1', variants: ['on'] }] : [] });
    flags.push(f);
    configs[f.name] = [
      config({
        rolloutPercentage: (i * 13) % 100,
        rules: [rule(`r${i}`, 1, { conditions: [{ field: 'plan', operator: '==', value: 'pro' }] })],
      }),
      config({ stage: 'staging', clientId: 'web', defaultVariantKey: 'on' }),
    ];
  }
  return snap(org({ version }), flags, configs);
}

function harness(compactMinBytes?: number) {
  const posted: StoreMessage[] = [];
  const writer = new SharedStoreWriter((m) => posted.push(m), { compactMinBytes });
  const reader = new SharedStoreReader(64);
  /** Delivers what the writer posted so far, as the BroadcastChannel would. */
  const deliver = () => {
    for (const m of posted.splice(0)) reader.receive(m);
  };
  return { posted, writer, reader, deliver };
}

/** Every flag evaluated on both sides for a few users and both stages: the answers must agree. */
function sameAnswers(t: Tap.Test, front: OrgSnapshot, view: OrgSnapshot, what: string): void {
  let compared = 0;
  for (const [name, cf] of front.flags) {
    const other = view.flags.get(name);
    if (other === undefined) {
      t.fail(`${what}: ${name} missing from the shared store`);
      return;
    }
    for (const userId of ['a', 'b', 'c']) {
      for (const stage of ['production', 'staging']) {
        const r = req({ userId, stage, clientId: stage === 'staging' ? 'web' : null, context: { plan: userId === 'a' ? 'pro' : 'free' } });
        const x = evaluateFlag(front, cf, r, NOW);
        const y = evaluateFlag(view, other, r, NOW);
        if (JSON.stringify(x) !== JSON.stringify(y)) {
          t.same(y, x, `${what}: ${name} ${userId} ${stage}`);
          return;
        }
        compared++;
      }
    }
  }
  t.ok(compared > 0, `${what}: ${compared} evaluations agree`);
}

t.test('apply rules', async (t) => {
  const c = (version: number, touches: Parameters<typeof stepFor>[1]['touches']) => ({ orgId: 'o', version, touches });
  t.same(stepFor(undefined, c(3, 'all')), { kind: 'absent' });
  t.same(stepFor(3, c(3, { flag: 'x' })), { kind: 'stale' }, 'a version already held is ignored');
  t.same(stepFor(4, c(3, 'all')), { kind: 'stale' }, 'never back to older data');
  t.same(stepFor(3, c(4, { flag: 'x' })), { kind: 'flag', name: 'x' }, 'a contiguous flag change applies the flag');
  t.same(stepFor(3, c(4, 'settings')), { kind: 'settings' });
  t.same(stepFor(3, c(5, { flag: 'x' })), { kind: 'reload' }, 'a gap reloads everything');
  t.same(stepFor(3, c(4, 'all')), { kind: 'reload' });
  t.ok(replaces(undefined, 1) && replaces(3, 3) && !replaces(4, 3));
  t.ok(serves(4, 4) && !serves(3, 4) && !serves(undefined, 0));
});

t.test('a full load is written once and read back lazily, answering as the front thread does', async (t) => {
  const { writer, reader, deliver, posted } = harness();
  const front = fixture(40);
  writer.update('org-1', front, 'all');
  t.equal(posted.length, 1, 'one message: the references of the new generation');
  t.equal(posted[0].type, 'org');
  t.equal(writer.stats.recordsWritten, 41, 'one record per flag and one for the organization row');
  t.equal(reader.view('org-1'), undefined, 'nothing before the message arrives');
  deliver();
  const view = reader.view('org-1')!;
  t.equal(view.version(), 5);
  t.ok(view.serves(5) && !view.serves(6));
  t.same(view.snapshot.org, front.org);
  t.equal(view.snapshot.flags.get('nope'), undefined);
  sameAnswers(t, front, view.snapshot, 'after the full load');
  t.ok(reader.cache.size <= 64, 'the cache stays within its bound');
});

t.test('a one-flag change writes that flag\'s record only and a version notification', async (t) => {
  const { writer, reader, deliver, posted } = harness();
  const front = fixture(200);
  writer.update('org-1', front, 'all');
  deliver();
  const view = reader.view('org-1')!;
  t.equal(view.snapshot.flags.get('f3')!.flag.description, null);
  const before = { ...writer.stats };
  const changed = flag({ name: 'f3', description: 'changed' });
  front.flags.set('f3', compileFlag(changed, [config({ defaultVariantKey: 'on' })]));
  front.org = { ...front.org, version: 6 };
  writer.update('org-1', front, { flag: 'f3' });
  const record = Buffer.byteLength(JSON.stringify({ flag: changed, configs: [config({ defaultVariantKey: 'on' })] })) + 2 + 8;
  t.equal(writer.stats.recordsWritten - before.recordsWritten, 1, 'one record');
  const written = writer.stats.bytesWritten - before.bytesWritten;
  t.ok(written >= record && written < record + 8, `bytes written (${written}) are that record's, padded to 8`);
  t.equal(writer.stats.messages - before.messages, 1, 'one message');
  t.same(posted.map((m) => m.type), ['version']);
  // The data is readable at once; the worker serves the version once told about it.
  t.equal(view.snapshot.flags.get('f3')!.flag.description, 'changed', 'the new record is in the shared memory');
  t.notOk(view.serves(6), 'not served before the notification');
  deliver();
  t.ok(view.serves(6), 'served after it');
  t.equal(view.snapshot.org.version, 6);
  sameAnswers(t, front, view.snapshot, 'after the change');

  // A stale or repeated change is ignored: the version never goes back.
  const stats = { ...writer.stats };
  writer.update('org-1', { org: { ...front.org, version: 6 }, flags: front.flags }, { flag: 'f3' });
  t.same(writer.stats, stats, 'a change at the version held writes nothing');
});

t.test('deletes, re-creates, settings and a gap', async (t) => {
  const { writer, reader, deliver, posted } = harness();
  const front = fixture(10);
  writer.update('org-1', front, 'all');
  deliver();
  const view = reader.view('org-1')!;
  front.flags.delete('f2');
  front.org = { ...front.org, version: 6 };
  writer.update('org-1', front, { flag: 'f2' });
  deliver();
  t.equal(view.snapshot.flags.get('f2'), undefined, 'a deleted flag is gone');
  t.ok(view.snapshot.flags.get('f3'), 'the others stay');
  front.flags.set('f2', compileFlag(flag({ name: 'f2', description: 'again' }), []));
  front.org = { ...front.org, version: 7 };
  writer.update('org-1', front, { flag: 'f2' });
  deliver();
  t.equal(view.snapshot.flags.get('f2')!.flag.description, 'again', 'a re-created flag is found again');

  front.org = { ...front.org, version: 8, killSwitch: [{ flag: 'f5', application: null, environment: null }] };
  writer.update('org-1', front, 'settings');
  deliver();
  t.same(view.snapshot.org.killSwitch, [{ flag: 'f5', application: null, environment: null }], 'settings replace the organization row');
  t.equal(view.snapshot.org.version, 8);

  // A gap (a missed cluster message) or 'all' writes a fresh generation.
  front.org = { ...front.org, version: 12 };
  writer.update('org-1', front, { flag: 'f4' });
  t.equal(posted.at(-1)!.type, 'org', 'a gap rewrites the organization');
  deliver();
  const fresh = reader.view('org-1')!;
  t.not(fresh, view, 'workers switch to the new generation');
  t.ok(fresh.serves(12));
  sameAnswers(t, front, fresh.snapshot, 'after the gap');

  writer.update('org-1', null, 'all');
  deliver();
  t.equal(reader.view('org-1'), undefined, 'a deleted organization is dropped');
});

t.test('a starting worker gets references, not data: one message per organization, nothing written', async (t) => {
  const { writer, posted } = harness();
  writer.update('org-1', fixture(50), 'all');
  writer.update('org-2', fixture(20), 'all');
  posted.length = 0;
  const before = { ...writer.stats };
  writer.replay();
  t.equal(posted.length, 2, 'one message per organization');
  t.equal(writer.stats.bytesWritten, before.bytesWritten, 'nothing written');
  const late = new SharedStoreReader(16);
  for (const m of posted) late.receive(m);
  t.ok(late.view('org-1')!.serves(5) && late.view('org-2')!.serves(5), 'the new reader serves at once');
  t.ok(late.view('org-1')!.snapshot.flags.get('f49'));
});

t.test('many changes, index growth and compaction keep answering as the front thread does', async (t) => {
  const { writer, reader, deliver } = harness(4096);
  const front = fixture(30);
  writer.update('org-1', front, 'all');
  deliver();
  let version = front.org.version;
  for (let i = 0; i < 600; i++) {
    // Rewrites of existing flags (dead records) and new flags (the index grows).
    const name = i % 3 === 0 ? `new${i}` : `f${i % 30}`;
    const cf = compileFlag(flag({ name, description: `v${i}` }), [config({ rolloutPercentage: i % 100, rules: [rule('r', 1)] })]);
    front.flags.set(name, cf);
    front.org = { ...front.org, version: ++version };
    writer.update('org-1', front, { flag: name });
    if (i % 50 === 0) deliver();
  }
  deliver();
  t.ok(writer.stats.compactions > 0, `compacted ${writer.stats.compactions} times`);
  t.ok(writer.stats.generations > writer.stats.compactions, 'the index grew too');
  const view = reader.view('org-1')!;
  t.ok(view.serves(version));
  sameAnswers(t, front, view.snapshot, 'after 600 changes');
  const live = [...front.flags.values()].reduce((n, c) => n + JSON.stringify({ flag: c.flag, configs: [...c.configs.values()].map((x) => x.config) }).length + 24, 0);
  t.ok(writer.sharedBytes() < 8 * live + 64 * 1024, `dead records are reclaimed (${writer.sharedBytes()} bytes for ${live} live)`);
});

t.test('the flag cache keeps the most recently used within its bound', async (t) => {
  const cache = new FlagCache(2);
  const c = compileFlag(flag(), []);
  cache.set(1, c);
  cache.set(2, c);
  cache.get(1);
  cache.set(3, c);
  t.equal(cache.size, 2);
  t.ok(cache.get(1) && cache.get(3), 'recently used entries stay');
  t.equal(cache.get(2), undefined, 'the least recently used went first');
  const none = new FlagCache(0);
  none.set(1, c);
  t.equal(none.size, 0, 'a bound of 0 keeps nothing');
});
