import t from 'tap';
import { readFileSync } from 'node:fs';
import { rolloutBucket, allocationBucket } from '../../../src/engine/index.js';

interface GoldenEntry {
  userId: string;
  rolloutBucket: number;
  allocationBucket: number;
}

const golden = JSON.parse(
  readFileSync(new URL('./golden/buckets.json', import.meta.url), 'utf8'),
) as { flag: string; entries: GoldenEntry[] };

t.test('golden buckets: 200 pinned users of golden-flag', async (t) => {
  t.equal(golden.flag, 'golden-flag');
  t.equal(golden.entries.length, 200);
  t.ok(golden.entries.some((e) => /[^\x00-\x7f]/.test(e.userId)), 'file includes non-ASCII user ids');
  let bad = 0;
  for (const e of golden.entries) {
    const r = rolloutBucket(golden.flag, e.userId);
    const a = allocationBucket(golden.flag, e.userId);
    if (r !== e.rolloutBucket || a !== e.allocationBucket) {
      bad++;
      t.fail(`${JSON.stringify(e.userId)}: got ${r}/${a}, pinned ${e.rolloutBucket}/${e.allocationBucket}`);
    }
  }
  t.equal(bad, 0, 'every pinned bucket reproduces');
});
