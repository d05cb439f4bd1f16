/**
 * The pure halves of the flag lifecycle (docs/insights.md, "Lifecycle"): the ISO 8601 duration
 * parser, the settings' validation, and the status function at every edge, with seconds.
 */
import t from 'tap';
import { parseDuration } from '../../../src/features/insights/duration.js';
import { applySettings, DEFAULT_SETTINGS, normaliseSettings, settingsMs } from '../../../src/features/insights/settings.js';
import { flagStatus, NO_USAGE, usageOf, type Usage } from '../../../src/features/insights/status.js';

const S = 1000;

t.test('durations', async (t) => {
  const ok: [string, number][] = [
    ['PT1S', S],
    ['pt1s', S],
    ['PT90S', 90 * S],
    ['PT1M', 60 * S],
    ['PT1H30M', 5400 * S],
    ['P1D', 86_400 * S],
    ['P1W', 7 * 86_400 * S],
    ['P40D', 40 * 86_400 * S],
    ['P1M', 30 * 86_400 * S],
    ['P1Y', 365 * 86_400 * S],
    ['P1DT1S', 86_401 * S],
  ];
  for (const [text, ms] of ok) t.same(parseDuration(text), { ms }, text);
  for (const bad of ['', 'P', 'PT', 'P1DT', 'PT0S', 'P0D', 'PT0.5S', '1D', 'P1S', 'PT1D', 'P-1D', 'P101Y', 'P1D ', ' P1D', 'P1H', 'P'.padEnd(80, '1')]) {
    t.ok('error' in parseDuration(bad), `'${bad}' refused`);
  }
});

t.test('settings', async (t) => {
  t.same(applySettings(DEFAULT_SETTINGS, { unusedAfter: 'PT1S' }).unusedAfter, 'PT1S');
  const s = applySettings(DEFAULT_SETTINGS, { lifetimes: { killSwitch: 'P1D', release: null } });
  t.same(s.lifetimes, { release: null, experiment: 'P40D', operational: 'P7D', killSwitch: 'P1D', permission: null });
  t.same(settingsMs(s).lifetimes.killSwitch, 86_400 * S);
  for (const bad of [{}, null, [], { unusedAfter: null }, { unusedAfter: 'PT0S' }, { lifetimes: { forever: 'P1D' } }, { lifetimes: null }, { other: 1 }]) {
    t.throws(() => applySettings(DEFAULT_SETTINGS, bad), { code: 'BAD_REQUEST' }, JSON.stringify(bad));
  }
  t.same(normaliseSettings(null), DEFAULT_SETTINGS, 'none stored: the defaults');
  t.same(normaliseSettings({ lifetimes: { release: 'garbage' }, unusedAfter: 'PT2S' }).lifetimes.release, 'P40D', 'a bad stored value falls back');
});

const NOW = Date.parse('2026-01-01T00:00:00Z');
const usage = (rows: [variant: string, firstAgo: number, lastAgo: number][]): Usage =>
  usageOf(rows.map(([variant, f, l]) => ({ variant, firstAt: NOW - f * S, lastAt: NOW - l * S })));
const status = (o: { age?: number; lifetime?: number | null; unusedAfter?: number; usage?: Usage; now?: number }) =>
  flagStatus({
    createdAt: NOW - (o.age ?? 0) * S,
    lifetimeMs: o.lifetime === undefined ? null : o.lifetime === null ? null : o.lifetime * S,
    unusedAfterMs: (o.unusedAfter ?? 3) * S,
    usage: o.usage ?? NO_USAGE,
    now: o.now ?? NOW,
  });
const pick = (r: { status: string; reasons: string[] }) => ({ status: r.status, reasons: r.reasons });

t.test('new: never evaluated, whatever its age', async (t) => {
  t.same(pick(status({})), { status: 'new', reasons: [] });
  t.same(pick(status({ age: 10, lifetime: 5 })), { status: 'new', reasons: ['age'] });
  t.equal(status({ age: 1, lifetime: 5 }).validUntil, NOW + 4 * S, 'valid until it grows old');
  t.equal(status({ age: 1, lifetime: null }).validUntil, Infinity);
});

t.test('unused: at exactly unusedAfter without evaluations, not a second before', async (t) => {
  const two = (lastAgo: number) => usage([['on', 100, lastAgo], ['off', 100, lastAgo]]);
  t.same(pick(status({ usage: two(3) })), { status: 'unused', reasons: ['unused'] }, 'at 3 s');
  t.same(pick(status({ usage: two(2.999) })), { status: 'active', reasons: [] }, 'at 2.999 s');
  t.equal(status({ usage: two(2) }).validUntil, NOW + S, 'valid until it turns unused');
  t.same(pick(status({ usage: two(4), age: 10, lifetime: 5 })), { status: 'unused', reasons: ['age', 'unused'] }, 'unused comes before stale');
});

t.test('stale by age: at exactly the lifetime; null never', async (t) => {
  const both = usage([['on', 100, 0], ['off', 100, 0]]);
  t.same(pick(status({ usage: both, age: 5, lifetime: 5 })), { status: 'stale', reasons: ['age'] });
  t.same(pick(status({ usage: both, age: 4.999, lifetime: 5 })), { status: 'active', reasons: [] });
  t.same(pick(status({ usage: both, age: 1e9, lifetime: null })), { status: 'active', reasons: [] });
});

t.test('stale by a single variant: every stage, the whole window', async (t) => {
  // One variant in the window over two stages' rows; the other left the window exactly at 3 s.
  const u = usageOf([
    { variant: 'on', firstAt: NOW - 10 * S, lastAt: NOW },
    { variant: 'on', firstAt: NOW - 5 * S, lastAt: NOW - S },
    { variant: 'off', firstAt: NOW - 20 * S, lastAt: NOW - 3 * S },
  ]);
  t.same(pick(status({ usage: u })), { status: 'stale', reasons: ['singleVariant'] });
  const u2 = usageOf([
    { variant: 'on', firstAt: NOW - 10 * S, lastAt: NOW },
    { variant: 'off', firstAt: NOW - 20 * S, lastAt: NOW - 2.999 * S },
  ]);
  t.same(pick(status({ usage: u2 })), { status: 'active', reasons: [] }, 'the other variant 2.999 s ago: still in the window');
  t.equal(status({ usage: u2 }).validUntil, NOW + 1, 'valid until it leaves');
  t.same(pick(status({ usage: usage([['on', 3, 0]]) })), { status: 'stale', reasons: ['singleVariant'] }, 'history of exactly the window');
  t.same(pick(status({ usage: usage([['on', 2.999, 0]]) })), { status: 'active', reasons: [] }, 'history shorter than the window');
  t.equal(status({ usage: usage([['on', 2, 0]]) }).validUntil, NOW + S, 'valid until the history covers the window');
  t.same(pick(status({ usage: usage([['on', 100, 1]]), age: 9, lifetime: 5 })), { status: 'stale', reasons: ['age', 'singleVariant'] });
  t.same(pick(status({ usage: usage([['on', 100, 5]]) })), { status: 'unused', reasons: ['unused'] }, 'no variant in the window is not a single variant');
});

t.test('active', async (t) => {
  t.same(pick(status({ usage: usage([['on', 100, 0], ['off', 100, 1]]), age: 1, lifetime: 5 })), { status: 'active', reasons: [] });
});
