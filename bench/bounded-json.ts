/**
 * Micro-bench of answer serialisation (no HTTP): `JSON.stringify` against `boundedJson`
 * (src/util/bounded-json.ts) on a REST evaluation body (the hot path), an evaluation body with
 * its reason, one flag with its configurations, and the answer of `GET /api/flags` for N flags.
 *
 *   npm run build && node dist/bench/bounded-json.js [--iterations 1000000] [--flags 100000]
 */
import { boundedJson } from '../src/util/bounded-json.js';
import { numberArg } from './argv.js';

const iterations = numberArg('iterations', 1_000_000);
const flagCount = numberArg('flags', 100_000);
const BOUND = 256 * 1024 * 1024;

const evaluation = { variant: true, key: 'on' };
const explained = { variant: { color: 'blue', size: 3 }, key: 'blue', reason: { code: 'rule_matched', message: 'Matched rule nl at priority 1', ruleId: 'nl' } };
const now = new Date().toISOString();
const flag = (i: number) => ({
  name: `bench-flag-${i}`, project: 'default', type: 'boolean', description: 'benchmark flag', tags: ['bench'], isArchived: false,
  variants: [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'off', value: false, valueType: 'boolean' }],
  environments: ['development', 'staging', 'production'], dependencies: [], createdAt: now, updatedAt: now,
});
const withConfigs = {
  ...flag(0),
  configs: [{
    stage: 'production', clientId: null, enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100,
    rules: [{ id: 'nl', priority: 1, conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'on', percentage: 100 }] }],
    activeFrom: null, activeUntil: null, enrollmentCutoff: null,
  }],
};
const list = Array.from({ length: flagCount }, (_, i) => flag(i));

function time(name: string, n: number, fn: () => unknown): number {
  for (let i = 0; i < Math.min(n, 10_000); i++) fn(); // warm-up
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn();
  const ns = Number(process.hrtime.bigint() - t0) / n;
  console.log(`${name.padEnd(48)} ${ns >= 1e6 ? `${(ns / 1e6).toFixed(1)} ms` : `${ns.toFixed(0)} ns`}`);
  return ns;
}

const rows: [string, unknown, number][] = [
  ['evaluation body', evaluation, iterations],
  ['evaluation body with reason', explained, iterations],
  ['one flag with its configuration', withConfigs, iterations / 10],
  [`GET /api/flags, ${flagCount} flags`, list, 5],
];
for (const [name, value, n] of rows) {
  const a = time(`${name}: JSON.stringify`, n, () => JSON.stringify(value));
  const b = time(`${name}: boundedJson`, n, () => boundedJson(value, BOUND));
  console.log(`${''.padEnd(48)} x${(b / a).toFixed(2)}`);
}
// What a front sends is bytes: JSON.stringify's string is encoded afterwards, boundedJson's Buffer is not.
const a = time('GET /api/flags: JSON.stringify + UTF-8 encoding', 5, () => Buffer.from(JSON.stringify(list), 'utf8'));
const b = time('GET /api/flags: boundedJson (a Buffer)', 5, () => boundedJson(list, BOUND));
console.log(`${''.padEnd(48)} x${(b / a).toFixed(2)}`);
