/**
 * The flag list's body from kept per-flag JSON (src/features/flags/list-body.ts): byte for byte
 * JSON.stringify's text and boundedJson's (property-tested with fast-check), a flag's JSON kept
 * per Flag object (a new object is serialised again, an unchanged one is not), and the answer
 * bound refused at exactly the sizes boundedJson refuses, stopping there. The gzip body
 * (flagListGzip) gunzips to exactly flagListBody's bytes through writes that replace, insert and
 * delete flags (fast-check), compresses again only the chunks a write changed, and refuses at the
 * same bound.
 */
import { gunzipSync } from 'node:zlib';
import fc from 'fast-check';
import t from 'tap';
import type { Flag } from '../../../src/domain/types.js';
import { flagListBody, flagListGzip, keptJson, lastGzipWork } from '../../../src/features/flags/list-body.js';
import { AnswerTooLargeError, boundedJson } from '../../../src/util/bounded-json.js';

const BIG = 1 << 30;

/** Strings with multi-byte characters, quotes, control characters and lone surrogates. */
const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 20 }), fc.string({ maxLength: 20 }));

const flag: fc.Arbitrary<Flag> = fc.record(
  {
    name: text,
    project: text,
    type: fc.constantFrom('boolean', 'string', 'number', 'json'),
    description: fc.option(text),
    tags: fc.array(text, { maxLength: 4 }),
    isArchived: fc.boolean(),
    variants: fc.array(fc.record({ key: text, value: fc.jsonValue({ maxDepth: 2 }), valueType: fc.constantFrom('boolean', 'string', 'number', 'json') }), { maxLength: 3 }),
    environments: fc.array(text, { maxLength: 3 }),
    dependencies: fc.array(fc.record({ flag: text, variants: fc.option(fc.array(text, { maxLength: 2 })) }), { maxLength: 2 }),
    purpose: fc.constantFrom('release', 'experiment', 'operational', 'permission', undefined),
    createdAt: fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
    updatedAt: fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  },
  { requiredKeys: ['name', 'project', 'type', 'description', 'tags', 'isArchived', 'variants', 'environments', 'dependencies', 'createdAt', 'updatedAt'] },
) as fc.Arbitrary<Flag>;

/** boundedJson's answer, as bytes, or the error's class. */
function bounded(v: unknown, max: number): Buffer | string {
  try {
    const s = boundedJson(v, max)!;
    return typeof s === 'string' ? Buffer.from(s, 'utf8') : s;
  } catch (err) {
    return (err as Error).constructor.name;
  }
}

function assembled(flags: Flag[], max: number): Buffer | string {
  try {
    return flagListBody(flags, max);
  } catch (err) {
    return (err as Error).constructor.name;
  }
}

const same = (a: Buffer | string, b: Buffer | string): boolean => (Buffer.isBuffer(a) && Buffer.isBuffer(b) ? a.equals(b) : a === b);

t.test('the same bytes as JSON.stringify and boundedJson', async (t) => {
  fc.assert(
    fc.property(fc.array(flag, { maxLength: 12 }), (flags) => {
      const body = flagListBody(flags, BIG);
      return body.equals(Buffer.from(JSON.stringify(flags), 'utf8')) && same(body, bounded(flags, BIG));
    }),
    { numRuns: 2000 },
  );
  // The same flags again: from the kept fragments, still the same bytes (and in another order).
  fc.assert(
    fc.property(fc.array(flag, { minLength: 1, maxLength: 8 }), (flags) => {
      flagListBody(flags, BIG);
      const reordered = [...flags].reverse().concat(flags.slice(0, 1));
      return flagListBody(reordered, BIG).equals(Buffer.from(JSON.stringify(reordered), 'utf8'));
    }),
    { numRuns: 500 },
  );
  t.equal(flagListBody([], BIG).toString(), '[]', 'no flags: []');
});

t.test('a flag changed is a new object and serialised again; an unchanged one is reused', async (t) => {
  const [a, b] = fc.sample(flag, { numRuns: 2, seed: 7 });
  t.equal(keptJson(a), undefined, 'nothing kept before a list shows the flag');
  flagListBody([a], BIG);
  const first = keptJson(a)!;
  t.ok(first.equals(Buffer.from(JSON.stringify(a), 'utf8')), 'a list keeps the flag\'s JSON');
  flagListBody([a, b], BIG);
  t.equal(keptJson(a), first, 'the next list reuses it');

  const changed: Flag = { ...a, description: 'changed é €' };
  const before = flagListBody([a, b], BIG);
  const after = flagListBody([changed, b], BIG);
  t.not(keptJson(changed), first, 'a new object: a new fragment');
  t.ok(after.equals(Buffer.from(JSON.stringify([changed, b]), 'utf8')), 'the list holds the new JSON');
  t.ok(before.equals(Buffer.from(JSON.stringify([a, b]), 'utf8')), 'the old object still gives its own');

  // The flags one list serialises share one block of exactly their bytes (not Node's 8 KiB pool).
  const fresh = fc.sample(flag, { numRuns: 3, seed: 11 });
  flagListBody(fresh, BIG);
  const views = fresh.map((f) => keptJson(f)!);
  t.ok(views.every((v) => v.buffer === views[0].buffer), 'one block for the flags of one list');
  t.equal(views[0].buffer.byteLength, views.reduce((n, v) => n + v.length, 0), 'of exactly their bytes');

  // Serialised once per object: a flag whose reads are counted.
  let reads = 0;
  const counted = { ...b, get description() { reads++; return 'counted'; } } as Flag;
  flagListBody([a, counted], BIG);
  flagListBody([counted, changed, counted], BIG);
  t.equal(reads, 1, 'read once over three appearances in two lists');
});

t.test('the bound: refused at the same sizes as boundedJson, and it stops there', async (t) => {
  fc.assert(
    fc.property(fc.array(flag, { maxLength: 6 }), fc.integer({ min: 0, max: 1500 }), (flags, max) => {
      const ref = Buffer.from(JSON.stringify(flags), 'utf8');
      const got = assembled(flags, max);
      return same(got, bounded(flags, max)) && (ref.length > max ? got === 'AnswerTooLargeError' : same(got, ref));
    }),
    { numRuns: 3000 },
  );
  const one = fc.sample(flag, { numRuns: 1, seed: 3 })[0];
  const size = Buffer.byteLength(JSON.stringify([one, one]));
  t.equal(flagListBody([one, one], size).length, size, 'at the bound: answered');
  t.throws(() => flagListBody([one, one], size - 1), AnswerTooLargeError, 'one byte over');
  t.throws(() => flagListBody(new Array(10).fill(one), 10), AnswerTooLargeError, 'brackets and commas alone over the bound');

  // 50,000 distinct flags (their commas fit) past a 100 KB bound: only the flags up to the bound are serialised.
  let reads = 0;
  const base = { ...one, description: 'x'.repeat(100) };
  const many = Array.from({ length: 50_000 }, () => ({ ...base, get name() { reads++; return 'flag-name-of-some-length'; } }) as Flag);
  const err = t.throws(() => flagListBody(many, 100_000), AnswerTooLargeError, 'refused');
  t.match(err, { limit: 100_000 }, 'the error carries the bound');
  t.ok(reads > 0 && reads < 1000, `stopped after ${reads} flags of 50,000`);
});

/** A plain flag of the bench's shape, cheap to make by the thousand (names in byte order). */
const plain = (i: number, description = `flag ${i}`): Flag => ({
  name: `flag-${String(i).padStart(6, '0')}`, project: 'default', type: 'boolean', description, tags: ['t'], isArchived: false,
  variants: [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'off', value: false, valueType: 'boolean' }],
  environments: ['production'], dependencies: [], purpose: 'release', createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z',
});

/** gunzip of flagListGzip, or the error's class. */
function gzipped(flags: readonly Flag[], max: number): Buffer | string {
  try {
    return gunzipSync(flagListGzip(flags, max)!);
  } catch (err) {
    return (err as Error).constructor.name;
  }
}

/** A write to a list: replace a flag with a new object, insert one, delete one. */
type Op = { kind: 'replace' | 'insert' | 'delete'; at: number; flag: Flag };
const op: fc.Arbitrary<Op> = fc.record({ kind: fc.constantFrom('replace', 'insert', 'delete'), at: fc.nat(), flag });

t.test('the gzip body gunzips to exactly the list body, through writes', async (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 3000 }), fc.array(op, { maxLength: 6 }), fc.array(flag, { maxLength: 5 }), (size, ops, odd) => {
      const list = Array.from({ length: size }, (_, i) => plain(i));
      list.splice(Math.floor(size / 2), 0, ...odd); // non-ASCII and escaped text somewhere in the middle
      for (const o of [null, ...ops]) {
        if (o !== null) {
          const at = o.at % (list.length + 1);
          if (o.kind === 'insert' || list.length === 0) list.splice(at, 0, o.flag);
          else if (o.kind === 'delete') list.splice(Math.min(at, list.length - 1), 1);
          else list[Math.min(at, list.length - 1)] = { ...o.flag, name: list[Math.min(at, list.length - 1)].name };
        }
        const gz = flagListGzip(list, BIG)!;
        if (!gunzipSync(gz).equals(flagListBody(list, BIG))) return false;
        // A page of it (starting elsewhere, ending anywhere) too.
        const page = list.slice(Math.floor(list.length / 3), Math.floor(list.length / 3) + 700);
        if (!gunzipSync(flagListGzip(page, BIG)!).equals(Buffer.from(JSON.stringify(page), 'utf8'))) return false;
      }
      return true;
    }),
    { numRuns: 60 },
  );
  t.equal(gunzipSync(flagListGzip([], BIG)!).toString(), '[]', 'no flags: []');
  t.equal(flagListGzip([plain(1)], BIG, 1000), null, 'shorter than minBytes: null');
});

t.test('a write compresses again the chunks it changed, not the list', async (t) => {
  const list = Array.from({ length: 20_000 }, (_, i) => plain(i));
  const first = flagListGzip(list, BIG)!;
  const all = lastGzipWork();
  t.ok(all.chunks > 40, `the list is cut into ${all.chunks} chunks`);
  t.equal(all.made, all.chunks, 'the first list compresses every chunk');
  t.ok(gunzipSync(first).equals(flagListBody(list, BIG)));

  flagListGzip(list, BIG);
  t.equal(lastGzipWork().made, 0, 'the same list again: nothing compressed');
  const body = flagListBody(list, BIG).length;
  const check = (what: string, most: number) => {
    const gz = flagListGzip(list, BIG)!;
    const w = lastGzipWork();
    t.ok(w.made <= most && w.bytesCompressed < body / 20, `${what}: ${w.made} chunks, ${w.bytesCompressed} of ${body} bytes compressed`);
    t.ok(gunzipSync(gz).equals(flagListBody(list, BIG)), `${what}: the same bytes as the list body`);
  };
  list[10_000] = plain(10_000, 'written: é € 𝄞 "quoted" \n');
  check('one flag replaced', 1);
  list.splice(5000, 0, plain(5000.5 as number));
  check('one flag inserted', 2);
  list.splice(15_000, 1);
  check('one flag deleted', 2);
  list[0] = plain(0, 'the first');
  check('the first flag replaced', 1);
  list.pop();
  check('the last flag deleted', 1);
  const page = list.slice(3000, 3700);
  flagListGzip(page, BIG);
  flagListGzip(page, BIG);
  t.equal(lastGzipWork().made, 0, 'a page again: its last chunk kept as a last chunk');
  t.ok(gunzipSync(flagListGzip(list.slice(3000, 3701), BIG)!).equals(flagListBody(list.slice(3000, 3701), BIG)), 'and not used where the list goes on');
});

t.test('the gzip body: refused at the same bound as the list body, nothing kept then', async (t) => {
  fc.assert(
    fc.property(fc.array(flag, { maxLength: 6 }), fc.integer({ min: 0, max: 1500 }), (flags, max) => {
      const ref = assembled(flags, max);
      const got = gzipped(flags, max);
      return same(got, ref);
    }),
    { numRuns: 2000 },
  );
  const fresh = fc.sample(flag, { numRuns: 3, seed: 21 });
  const size = Buffer.byteLength(JSON.stringify(fresh));
  t.throws(() => flagListGzip(fresh, size - 1), AnswerTooLargeError, 'one byte over');
  t.equal(keptJson(fresh[0]), undefined, 'a refused list keeps nothing');
  t.ok(gunzipSync(flagListGzip(fresh, size)!).equals(Buffer.from(JSON.stringify(fresh), 'utf8')), 'at the bound: answered');
  const big = Array.from({ length: 3000 }, (_, i) => plain(i));
  const sizeBig = flagListBody(big, BIG).length;
  t.ok(gunzipSync(flagListGzip(big, sizeBig)!).length === sizeBig, 'kept chunks counted: at the bound, answered');
  t.throws(() => flagListGzip(big, sizeBig - 1), AnswerTooLargeError, 'kept chunks counted: one byte over');
});
