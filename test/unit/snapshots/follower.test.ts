/**
 * A node's two replicas (src/snapshots/registry.ts): the reader (the management actor's) reads a
 * fake database; the follower (the front's) applies the updates the reader applied, each cloned as
 * it would cross the mailbox, and reads nothing itself. Each change costs one read; the follower
 * ends with what the reader holds; a whole reload reaches it without a second read; an update it
 * missed makes it ask for the organization whole.
 */
import t from 'tap';
import type { Flag, FlagConfig, Organization } from '../../../src/domain/types.js';
import { SnapshotRegistry, type Change, type OrgUpdate, type SnapshotSource, type Touches } from '../../../src/snapshots/registry.js';
import { config, flag, org } from '../../helpers/engine-fixtures.js';

/** A database of one organization: its row, flags, configurations and change log; counts each statement. */
function fakeDatabase() {
  const db = { org: org({ id: 'o1', version: 1 }) as Organization, flags: new Map<string, Flag>(), configs: new Map<string, FlagConfig[]>(), log: new Map<number, Touches>() };
  const reads = { changes: 0, organization: 0 };
  const source: SnapshotSource = {
    org: async () => (reads.organization++, { ...db.org }),
    flags: async () => (reads.organization++, [...db.flags.values()]),
    orgConfigs: async () => (reads.organization++, new Map(db.configs)),
    segments: async () => (reads.organization++, []),
    changesSince: async (_id, held) => {
      reads.changes++;
      const changes = [...db.log].filter(([v]) => v > held && v <= db.org.version).map(([version, touches]) => ({ version, touches }));
      const flags = new Map<string, { flag: Flag; configs: FlagConfig[] }>();
      for (const c of changes) {
        const name = typeof c.touches === 'object' && 'flag' in c.touches ? c.touches.flag : null;
        const f = name === null ? undefined : db.flags.get(name);
        if (f !== undefined) flags.set(f.name, { flag: f, configs: db.configs.get(f.name) ?? [] });
      }
      return { org: { ...db.org }, changes, flags, segments: new Map() };
    },
  };
  /** A committed write: a new version that touched `touches`. */
  const write = (touches: Touches, fn: () => void = () => {}): Change => {
    fn();
    db.org = { ...db.org, version: db.org.version + 1 };
    db.log.set(db.org.version, touches);
    return { orgId: 'o1', version: db.org.version, touches };
  };
  return { db, reads, source, write };
}

/** A reader and a follower wired like the actor and the front: updates cross cloned, in order. */
function node() {
  const fake = fakeDatabase();
  const reader = new SnapshotRegistry(fake.source);
  const sent: OrgUpdate[] = [];
  let deliver = true;
  const follower = SnapshotRegistry.following({ load: (orgId) => reader.reload(orgId), hint: (change) => reader.apply(change) });
  reader.onUpdate((u) => {
    sent.push(u);
    if (deliver) follower.accept(structuredClone(u));
  });
  const heard: [number | null, Touches][] = [];
  follower.onChange((_id, snap, touches) => heard.push([snap?.org.version ?? null, touches]));
  return { ...fake, reader, follower, sent, heard, drop: (on: boolean) => (deliver = !on) };
}

const defaults = (r: SnapshotRegistry, name: string) => r.peek('o1')?.flags.get(name)?.configs.get('production')?.config.defaultVariantKey;

t.test('each change is read once, and the follower applies what the reader read', async (t) => {
  const n = node();
  n.db.flags.set('a', flag({ name: 'a' }));
  n.db.configs.set('a', [config({ stage: 'production', defaultVariantKey: 'on' })]);
  t.equal((await n.follower.get('o1'))?.org.version, 1, "the follower's first use loads through the reader");
  t.same(n.reads, { changes: 0, organization: 4 }, 'one whole read, for both');
  t.equal(n.reader.peek('o1')?.org.version, 1);

  // A write on this node: the reader reads it back once, the follower gets its delta.
  const w = n.write({ flag: 'a' }, () => n.db.configs.set('a', [config({ stage: 'production', defaultVariantKey: 'off' })]));
  await n.reader.apply(w);
  t.same(n.reads, { changes: 1, organization: 4 });
  t.equal(defaults(n.follower, 'a'), 'off', 'the follower serves the write');
  t.equal(n.follower.peek('o1')?.org.version, 2);

  // Another node's write, hinted to the follower: the reader reads once.
  const w2 = n.write({ flag: 'b' }, () => n.db.flags.set('b', flag({ name: 'b' })));
  await n.follower.apply(w2);
  t.same(n.reads, { changes: 2, organization: 4 });
  t.ok(n.follower.peek('o1')?.flags.has('b'));
  // The same hint again (the bus, a poll): nothing read.
  await n.follower.apply(w2);
  await n.reader.apply(w2);
  t.same(n.reads, { changes: 2, organization: 4 }, 'a hint at or below the version held reads nothing');
  t.same(n.heard, [[1, 'all'], [2, { flag: 'a' }], [3, { flag: 'b' }]], "the follower's listeners hear each version once, in order");

  // A new reader (a restarted actor) loads every organization and sends it: the follower keeps
  // what it holds at that version, and follows the new reader's updates from there.
  const again = new SnapshotRegistry(n.source);
  again.onUpdate((u) => n.follower.accept(structuredClone(u)));
  const held = n.follower.peek('o1');
  await again.get('o1');
  t.equal(n.follower.peek('o1'), held, 'a whole load at the version held is not rebuilt');
  t.equal(n.heard.length, 3, 'and not announced');
  await again.apply(n.write({ flag: 'a' }, () => n.db.flags.set('a', flag({ name: 'a', description: 'after restart' }))));
  t.equal(n.follower.peek('o1')?.flags.get('a')?.flag.description, 'after restart', "the new reader's next delta applies");
});

t.test('a rename: the organization read whole once reaches the follower', async (t) => {
  const n = node();
  n.db.flags.set('a', flag({ name: 'a' }));
  await n.follower.get('o1');
  const before = { ...n.reads };
  const w = n.write('all', () => n.db.flags.set('c', flag({ name: 'c' })));
  await n.follower.apply(w);
  t.same(n.reads, { changes: before.changes + 1, organization: before.organization + 4 }, 'the log once, then the organization whole once');
  t.same([...n.follower.peek('o1')!.flags.keys()].sort(), ['a', 'c']);
  t.equal(n.follower.peek('o1')?.org.version, 2);
});

t.test('a follower that missed an update asks for the organization whole; one ahead of a delta still applies it', async (t) => {
  const n = node();
  n.db.flags.set('a', flag({ name: 'a' }));
  await n.follower.get('o1');
  n.drop(true);
  await n.reader.apply(n.write({ flag: 'a' }, () => n.db.flags.set('a', flag({ name: 'a', description: 'v2' }))));
  n.drop(false);
  const w = n.write({ flag: 'b' }, () => n.db.flags.set('b', flag({ name: 'b' })));
  await n.reader.apply(w);
  // The delta after version 2 does not fit a follower at 1: it asks for the whole organization.
  await new Promise((r) => setTimeout(r, 10));
  t.equal(n.follower.peek('o1')?.org.version, 3, 'caught up by a whole read');
  t.equal(n.follower.peek('o1')?.flags.get('a')?.flag.description, 'v2', 'the missed write too');

  // A delta read after a version the follower has passed (versions 3..5, follower at 4).
  const f = n.follower.peek('o1')!;
  n.write({ flag: 'a' }, () => n.db.flags.set('a', flag({ name: 'a', description: 'v4' })));
  const w5 = n.write({ flag: 'b' }, () => n.db.flags.set('b', flag({ name: 'b', description: 'v5' })));
  const wide = await n.source.changesSince('o1', 3, 1000);
  const narrow = await n.source.changesSince('o1', 3, 1000);
  narrow!.changes = narrow!.changes.filter((c) => c.version <= 4);
  narrow!.org = { ...narrow!.org, version: 4 };
  narrow!.flags.delete('b');
  n.follower.accept({ kind: 'delta', orgId: 'o1', from: 3, delta: narrow! });
  t.equal(f.org.version, 4);
  const heard = n.heard.length;
  n.follower.accept({ kind: 'delta', orgId: 'o1', from: 3, delta: wide! });
  t.equal(f.org.version, w5.version, 'applied up to the delta');
  t.equal(f.flags.get('b')?.flag.description, 'v5');
  t.same(n.heard.slice(heard), [[5, { flag: 'b' }]], 'listeners hear only the version not held yet');
});
