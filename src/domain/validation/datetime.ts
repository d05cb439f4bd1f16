/** ISO 8601 date-times with a time zone (config time windows, the GraphQL DateTime scalar). */
import { badRequest } from '../errors.js';
import { describeType } from './common.js';

const DATE_TIME_RE =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)$/;

function daysInMonth(year: number, month: number): number {
  return [31, year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][
    month - 1
  ];
}

/**
 * Parses an ISO 8601 date-time that carries a time zone (`Z` or `±hh[:mm]`) and returns it
 * normalised with `Date#toISOString()` (UTC, milliseconds). Strings without a zone, impossible
 * dates (2024-02-30) and anything else are 400. Also used by the GraphQL DateTime scalar.
 */
export function parseDateTime(value: unknown, path = 'DateTime'): string {
  const fail = (why: string): never => {
    throw badRequest(`${path}: ${why}`);
  };
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) fail('invalid date');
    return value.toISOString();
  }
  if (typeof value !== 'string')
    return fail(`expected an ISO 8601 date-time string with time zone, got ${describeType(value)}`);
  const m = DATE_TIME_RE.exec(value);
  if (!m) {
    const noZone = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}([.,]\d+)?)?$/.test(value);
    return fail(
      noZone
        ? `'${value}' has no time zone (add 'Z' or an offset such as '+02:00')`
        : `'${value}' is not an ISO 8601 date-time with time zone (e.g. 2024-05-01T12:00:00Z)`,
    );
  }
  const [, ys, mos, ds, hs, mis, ss, fs, z, sign, ohs, oms] = m;
  const year = Number(ys), month = Number(mos), day = Number(ds);
  const hour = Number(hs), minute = Number(mis), second = ss === undefined ? 0 : Number(ss);
  const ms = fs === undefined ? 0 : Math.floor(Number(`0.${fs}`) * 1000);
  if (month < 1 || month > 12) fail(`'${value}' has an invalid month`);
  if (day < 1 || day > daysInMonth(year, month)) fail(`'${value}' has an invalid day`);
  if (hour > 23 || minute > 59 || second > 59) fail(`'${value}' has an invalid time`);
  let offsetMin = 0;
  if (z === undefined) {
    const oh = Number(ohs), om = oms === undefined ? 0 : Number(oms);
    if (oh > 23 || om > 59) fail(`'${value}' has an invalid time zone offset`);
    offsetMin = (sign === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, ms);
  const t = d.getTime() - offsetMin * 60_000;
  const out = new Date(t);
  if (Number.isNaN(t) || out.getUTCFullYear() < 0 || out.getUTCFullYear() > 9999)
    fail(`'${value}' is out of range`);
  return out.toISOString();
}
