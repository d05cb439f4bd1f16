/**
 * `boundedJson` (src/util/bounded-json.ts; docs/limits.md, "Large answers"): byte for byte JSON.stringify's text,
 * property-tested with fast-check, and an answer past its bound stops there with
 * AnswerTooLargeError.
 */
import fc from 'fast-check';
import t from 'tap';
import { AnswerTooLargeError, boundedJson } from '../../../src/util/bounded-json.js';

const BIG = 1 << 30;

/** What JSON.stringify answers (text or the error's class), as UTF-8 bytes. */
function reference(v: unknown): Buffer | undefined | string {
  try {
    const s = JSON.stringify(v);
    return s === undefined ? undefined : Buffer.from(s, 'utf8');
  } catch (err) {
    return (err as Error).constructor.name;
  }
}

function bounded(v: unknown, max = BIG): Buffer | undefined | string {
  try {
    const s = boundedJson(v, max);
    return s === undefined ? undefined : typeof s === 'string' ? Buffer.from(s, 'utf8') : s;
  } catch (err) {
    return (err as Error).constructor.name;
  }
}

const same = (a: Buffer | undefined | string, b: Buffer | undefined | string): boolean =>
  Buffer.isBuffer(a) && Buffer.isBuffer(b) ? a.equals(b) : a === b;

/** Values that exercise SerializeJSONProperty: toJSON with its key, boxes, omitted values. */
const special = fc.oneof(
  fc.constant(undefined),
  fc.constant(() => 1),
  fc.constant(Symbol('s')),
  fc.constant(NaN),
  fc.constant(-0),
  fc.constant(Infinity),
  fc.date({ noInvalidDate: false }),
  fc.string({ unit: 'binary' }).map((s) => ({ toJSON: (k: string) => `${k}|${s}` })),
  fc.constant({ toJSON: () => undefined }),
  fc.integer().map((n) => new Number(n)),
  fc.string({ unit: 'binary' }).map((s) => new String(s)),
  fc.boolean().map((b) => new Boolean(b)),
  fc.constant(Object.create(null, { a: { value: 1, enumerable: true }, hidden: { value: 2, enumerable: false } })),
  fc.constant(new Map([[1, 2]])),
  fc.constant(new Uint8Array([1, 2, 3])),
);

const value = fc.letrec((tie) => ({
  leaf: fc.oneof(
    fc.string({ unit: 'binary' }),
    fc.string({ unit: 'grapheme' }),
    fc.string(),
    fc.double(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    special,
  ),
  node: fc.oneof({ depthSize: 'small', withCrossShrink: true }, tie('leaf'), tie('array'), tie('object')),
  array: fc.array(tie('node'), { maxLength: 6 }),
  object: fc.dictionary(fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom('toJSON', '__proto__', '0', 'a', '')), tie('node'), { maxKeys: 6 }),
})).node;

t.test('the same bytes as JSON.stringify', async (t) => {
  fc.assert(fc.property(value, (v) => same(bounded(v), reference(v))), { numRuns: 3000 });
  fc.assert(fc.property(fc.anything({ withBoxedValues: true, withDate: true, withMap: true, withSet: true, withNullPrototype: true, withObjectString: true, withSparseArray: true, withTypedArray: true, withBigInt: true, withUnicodeString: true }), (v) => same(bounded(v), reference(v))), { numRuns: 3000 });
  fc.assert(fc.property(fc.jsonValue(), (v) => same(bounded(v), reference(v))), { numRuns: 2000 });
  t.pass('3000 + 3000 + 2000 generated values');
});

t.test('JSON.stringify edge cases', async (t) => {
  const cases: unknown[] = [
    undefined, null, 'a"b\\c\u0000\u001f\u2028\ud800x\udfff', [undefined, () => 1, Symbol('x')], { a: undefined, b: () => 1 },
    // eslint-disable-next-line no-sparse-arrays
    [1, , 3], new Date(0), new Date(NaN), { d: new Date(0) }, { toJSON: () => ({ nested: [1, { toJSON: (k: string) => k }] }) },
    [{ toJSON: (k: string) => k }, { toJSON: (k: string) => k }], 1e21, 5e-324, -0, { '': { '': '' } }, new Array(3),
  ];
  cases.forEach((c, i) => t.ok(same(bounded(c), reference(c)), `case ${i}: the same as JSON.stringify`));
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = { again: cyclic };
  t.throws(() => boundedJson(cyclic, BIG), TypeError, 'a cycle is a TypeError, as JSON.stringify');
  t.throws(() => boundedJson({ n: 1n }, BIG), TypeError, 'a BigInt is a TypeError, as JSON.stringify');
  const shared = { x: 1 };
  t.ok(same(bounded([shared, shared]), reference([shared, shared])), 'the same object twice is no cycle');
});

t.test('chunks: large answers are Buffers with the same bytes', async (t) => {
  const wide = Array.from({ length: 3000 }, (_, i) => ({ i, s: `é€😀 ${'x'.repeat(i % 97)} "q" \\ \n`, u: i % 2 === 0 ? undefined : null }));
  const out = boundedJson(wide, BIG);
  t.ok(Buffer.isBuffer(out), 'over one chunk: a Buffer');
  t.ok((out as Buffer).equals(Buffer.from(JSON.stringify(wide), 'utf8')), 'the same bytes');
  const long = 'ü'.repeat(200_000);
  t.ok(same(bounded({ long, after: [long] }), reference({ long, after: [long] })), 'strings longer than a chunk');
  t.equal(typeof boundedJson({ small: true }, BIG), 'string', 'a small answer stays a string');
  fc.assert(
    fc.property(fc.array(fc.string({ unit: 'binary', maxLength: 3000 }), { maxLength: 120 }), (a) => same(bounded(a), reference(a))),
    { numRuns: 200 },
  );
});

t.test('the bound: refused exactly when the UTF-8 text is longer, and it stops there', async (t) => {
  fc.assert(
    fc.property(value, fc.integer({ min: 0, max: 400 }), (v, max) => {
      const ref = reference(v);
      const got = bounded(v, max);
      if (!Buffer.isBuffer(ref)) return same(got, ref);
      return ref.length > max ? got === 'AnswerTooLargeError' : same(got, ref);
    }),
    { numRuns: 3000 },
  );
  const text = JSON.stringify(['é'.repeat(100)]);
  const bytes = Buffer.byteLength(text);
  t.equal(typeof boundedJson(['é'.repeat(100)], bytes), 'string', 'at the bound: answered');
  t.throws(() => boundedJson(['é'.repeat(100)], bytes - 1), AnswerTooLargeError, 'one byte over (multi-byte characters counted as bytes)');

  // A million items whose reads are counted: past a 100 KB bound, only about a chunk more is read.
  let reads = 0;
  const item = { get name() { reads++; return 'flag-name-of-some-length'; } };
  const many = new Array(1_000_000).fill(item);
  const started = performance.now();
  t.throws(() => boundedJson(many, 100_000), AnswerTooLargeError);
  t.ok(reads < 10_000, `stopped after ${reads} items of 1,000,000`);
  t.ok(performance.now() - started < 200, 'in a few milliseconds');
  t.match(t.throws(() => boundedJson(many, 4096), AnswerTooLargeError), { limit: 4096 }, 'the error carries the bound');
});
