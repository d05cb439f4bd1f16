/** The pure checks of a schedule's body (docs/api.md#scheduled-changes): `now` is passed in. */
import t from 'tap';
import { isVexilError } from '../../../src/domain/errors.js';
import { DEFAULT_TENANCY_LIMITS, parseSchedule, SCHEDULE_HORIZON_MS } from '../../../src/domain/validation.js';

const NOW = Date.parse('2030-06-01T12:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const config = { stage: 'production', enabled: true, defaultVariantKey: 'on', rolloutPercentage: 100 };

function refused(t: Tap.Test, body: unknown, re: RegExp, what: string, limits = DEFAULT_TENANCY_LIMITS): void {
  try {
    parseSchedule(body, NOW, limits);
    t.fail(`${what}: not refused`);
  } catch (e) {
    t.ok(isVexilError(e) && e.code === 'BAD_REQUEST', `${what}: BAD_REQUEST`);
    t.match((e as Error).message, re, `${what}: says why`);
  }
}
declare namespace Tap { type Test = typeof t }

t.test('an enable or disable: at normalised to UTC, clientId null by default', async (t) => {
  t.same(parseSchedule({ at: '2030-06-01T14:00:00+02:00', stage: 'production', enabled: false }, NOW - 1), {
    at: '2030-06-01T12:00:00.000Z', stage: 'production', clientId: null, enabled: false, config: null,
  });
  t.same(parseSchedule({ at: iso(NOW + 1000), stage: 'dev', clientId: 'c1', enabled: true, config: null }, NOW).clientId, 'c1');
});

t.test('a configuration: parsed by the configuration rules, with the same stage and clientId', async (t) => {
  const p = parseSchedule({ at: iso(NOW + 1000), stage: 'Production', config: { ...config, rules: [] }, enabled: null }, NOW);
  t.equal(p.enabled, null);
  t.same(p.config, { ...config, clientId: null, rules: [], activeFrom: null, activeUntil: null, enrollmentCutoff: null });
  t.ok(parseSchedule({ at: iso(NOW + 1000), stage: 'production', clientId: 'x', config: { ...config, clientId: 'x' } }, NOW).config);
});

t.test('at: in the future, within a year, a date-time with a time zone', async (t) => {
  refused(t, { at: iso(NOW), stage: 'production', enabled: true }, /at: must be in the future/, 'now');
  refused(t, { at: iso(NOW - 1), stage: 'production', enabled: true }, /at: must be in the future/, 'past');
  t.ok(parseSchedule({ at: iso(NOW + SCHEDULE_HORIZON_MS), stage: 'production', enabled: true }, NOW), 'exactly a year ahead');
  refused(t, { at: iso(NOW + SCHEDULE_HORIZON_MS + 1), stage: 'production', enabled: true }, /at most a year/, 'past a year');
  refused(t, { at: '2030-07-01T00:00:00', stage: 'production', enabled: true }, /^at: /, 'no time zone');
  refused(t, { at: 1_900_000_000_000, stage: 'production', enabled: true }, /^at: /, 'a number');
  refused(t, { stage: 'production', enabled: true }, /at.*required/, 'missing');
});

t.test('exactly one of enabled and config', async (t) => {
  const at = iso(NOW + 1000);
  refused(t, { at, stage: 'production' }, /exactly one/, 'neither');
  refused(t, { at, stage: 'production', enabled: null, config: null }, /exactly one/, 'both null');
  refused(t, { at, stage: 'production', enabled: true, config }, /exactly one/, 'both');
  refused(t, { at, stage: 'production', enabled: 1 }, /enabled/, 'enabled not a boolean');
});

t.test('the configuration: its own errors under config, and its stage and clientId the schedule\'s', async (t) => {
  const at = iso(NOW + 1000);
  refused(t, { at, stage: 'production', config: { ...config, rolloutPercentage: 150 } }, /^config: .*rolloutPercentage/, 'out of range');
  refused(t, { at, stage: 'production', config: 'on' }, /^config: /, 'not an object');
  refused(t, { at, stage: 'production', config: { ...config, stage: 'dev' } }, /config.stage/, 'another stage');
  refused(t, { at, stage: 'production', config: { ...config, clientId: 'x' } }, /config.clientId/, 'another clientId');
  refused(t, { at, stage: 'production', clientId: 'x', config }, /config.clientId/, 'clientId missing in config');
  const rules = [{ priority: 1, conditions: [], allocations: [{ variantKey: 'on', percentage: 100 }] }];
  refused(t, { at, stage: 'production', config: { ...config, rules: [...rules, ...rules] } }, /VEXIL_MAX_RULES_PER_CONFIG/, 'size limits', { ...DEFAULT_TENANCY_LIMITS, maxRulesPerConfig: 1 });
});

t.test('the body: an object with known fields and a valid stage name', async (t) => {
  const at = iso(NOW + 1000);
  refused(t, [], /schedule/, 'an array');
  refused(t, { at, stage: 'production', enabled: true, colour: 'red' }, /colour/, 'unknown field');
  refused(t, { at, stage: 'bad stage!', enabled: true }, /stage/, 'stage name');
  refused(t, { at, stage: 'production', clientId: '', enabled: true }, /clientId/, 'empty clientId');
});
