import { describe, expect, test } from 'bun:test';
import { parseTimestamp, resolveEventTime } from '../../../src/core/ingest/event-time';

/**
 * Canonical ISO timestamps (`toISOString`, what SDKs send) are read by a fast path; every other
 * form by the general one. A trailing space keeps a string off the fast path (the general path
 * trims it), so each case is checked against the general path's own answer.
 */
describe('parseTimestamp: the canonical fast path agrees with the general path', () => {
  const general = (s: string) => parseTimestamp(`${s} `);

  test('random valid times, with and without fractions of any length', () => {
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const p = (n: number, w: number) => String(n).padStart(w, '0');
    for (let i = 0; i < 5_000; i++) {
      const ms = rand(2 ** 31) * 2_000 - 1e12; // ~1938..2106
      const base = new Date(ms).toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
      const fraction = ['', '.5', '.12', `.${p(rand(1000), 3)}`, `.${p(rand(1_000_000), 6)}`][rand(5)];
      const s = `${base.slice(0, 19)}${fraction}Z`;
      expect(parseTimestamp(s)).toBe(general(s));
      expect(parseTimestamp(s)).toBe(Date.parse(`${base.slice(0, 19)}.${(fraction.slice(1) + '000').slice(0, 3)}Z`));
    }
  });

  test.each([
    '2024-02-29T12:00:00Z', // leap day
    '2023-02-29T12:00:00Z', // not a leap year
    '2100-02-29T00:00:00Z', // century, not a leap year
    '2000-02-29T00:00:00Z', // 400-year leap
    '2023-04-31T00:00:00Z',
    '2023-13-01T00:00:00Z',
    '2023-00-10T00:00:00Z',
    '2023-01-00T00:00:00Z',
    '2023-01-01T24:00:00Z',
    '2023-01-01T23:60:00Z',
    '2023-01-01T23:59:60Z',
    '0001-01-01T12:00:00Z', // years below 100 take the general path
    '0099-12-31T23:59:59.999Z',
    '9999-12-31T23:59:59.999Z',
    '2023-01-01T00:00:00.Z',
    '2023-01-01T00:00:00.1x3Z',
    '2023-01-01T00:00:0xZ',
    '2023-01-01 00:00:00Z',
  ])('%s', (s) => {
    expect(parseTimestamp(s)).toBe(general(s));
  });

  test('results: valid dates parse, impossible ones are not times', () => {
    expect(parseTimestamp('2024-02-29T12:00:00Z')).toBe(Date.UTC(2024, 1, 29, 12));
    expect(parseTimestamp('2023-02-29T12:00:00Z')).toBeNull();
    expect(parseTimestamp('2023-06-01T10:20:30.123456Z')).toBe(Date.UTC(2023, 5, 1, 10, 20, 30, 123));
    expect(parseTimestamp('0001-01-01T12:00:00Z')).toBe(Date.parse('0001-01-01T12:00:00Z'));
  });
});

describe('resolveEventTime: years 0-9999 kept, others become the epoch', () => {
  test.each([
    ['0000-01-01T00:00:00.000Z', Date.parse('0000-01-01T00:00:00.000Z')],
    ['9999-12-31T23:59:59.999Z', Date.parse('9999-12-31T23:59:59.999Z')],
  ])('%s', (timestamp, expected) => {
    expect(resolveEventTime({ timestamp }, Date.parse('9999-12-31T23:59:59.999Z'), null)).toBe(expected);
  });

  test('just outside the range', () => {
    const now = Date.parse('2024-01-01T00:00:00Z');
    expect(resolveEventTime({ offset: now - (Date.parse('0000-01-01T00:00:00.000Z') - 1) }, now, null)).toBe(0);
    expect(resolveEventTime({ timestamp: Date.parse('9999-12-31T23:59:59.999Z') + 1 }, Date.parse('9999-12-31T23:59:59.999Z') + 1, null)).toBe(0);
  });
});

describe('resolveEventTime: whole milliseconds', () => {
  test.each([
    [1_709_251_199_999.4, 1_709_251_199_999],
    [1_709_251_199_999.6, 1_709_251_200_000],
    ['1709251199999.6', 1_709_251_200_000],
  ])('%p → %p (fractions rounded: the day and the uuid follow the stored time)', (timestamp, expected) => {
    expect(resolveEventTime({ timestamp }, 1_709_300_000_000, null)).toBe(expected);
  });
});
