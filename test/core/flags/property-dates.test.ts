import { describe, expect, test } from 'bun:test';
import { parseDateText, parsePropertyDate, parseRelativeDate } from '../../../src/core/flags/property-dates';

const NOW = new Date('2020-01-01T12:01:20.134Z');

describe('parseRelativeDate (cases from the flags service)', () => {
  test.each([
    ['1h', NOW, '2020-01-01T11:01:20.134Z'],
    ['24h', NOW, '2019-12-31T12:01:20.134Z'],
    ['30h', NOW, '2019-12-31T06:01:20.134Z'],
    ['1d', NOW, '2019-12-31T12:01:20.134Z'],
    ['7d', NOW, '2019-12-25T12:01:20.134Z'],
    ['-30d', NOW, '2019-12-02T12:01:20.134Z'],
    ['1w', NOW, '2019-12-25T12:01:20.134Z'],
    ['8w', NOW, '2019-11-06T12:01:20.134Z'],
    ['1m', NOW, '2019-12-01T12:01:20.134Z'],
    ['8m', NOW, '2019-05-01T12:01:20.134Z'],
    ['12m', NOW, '2019-01-01T12:01:20.134Z'],
    ['1y', NOW, '2019-01-01T12:01:20.134Z'],
    ['8y', NOW, '2012-01-01T12:01:20.134Z'],
    ['4m', new Date('2020-04-03T00:00:00Z'), '2019-12-03T00:00:00.000Z'],
    ['1m', new Date('2020-03-31T12:00:00Z'), '2020-02-29T12:00:00.000Z'],
    ['1m', new Date('2019-03-31T12:00:00Z'), '2019-02-28T12:00:00.000Z'],
    ['2m', new Date('2019-03-31T12:00:00Z'), '2019-01-28T12:00:00.000Z'],
    ['1y', new Date('2020-02-29T12:00:00Z'), '2019-02-28T12:00:00.000Z'],
    ['000h', NOW, '2020-01-01T12:01:20.134Z'],
  ])('%s before %s is %s', (text, now, expected) => {
    expect(parseRelativeDate(text, now)?.toISOString()).toBe(expected);
  });

  test.each(['1', '1x', '1.2y', '1z', '1s', 'bazinga', '000bello', '10000d', '1000000h', '-d', ''])(
    '%p is not a relative date',
    (text) => {
      expect(parseRelativeDate(text, NOW)).toBeNull();
    },
  );

  test.each(['9999d', '9999h', '9999w', '9999m', '9999y'])('%s is the largest accepted amount', (text) => {
    expect(parseRelativeDate(text, NOW)).not.toBeNull();
  });
});

describe('parseDateText', () => {
  test.each([
    ['2025-12-19', '2025-12-19T00:00:00.000Z'],
    ['2025-1-9', '2025-01-09T00:00:00.000Z'],
    ['2025-12-19T00:00:00.000', '2025-12-19T00:00:00.000Z'],
    ['2025-12-19T00:00:00.5', '2025-12-19T00:00:00.500Z'],
    ['2025-12-19T00:00:00.12', '2025-12-19T00:00:00.120Z'],
    ['2025-12-19 08:30', '2025-12-19T08:30:00.000Z'],
    ['2025-12-19T08:30:00Z', '2025-12-19T08:30:00.000Z'],
    ['2025-12-19T08:30:00+02:00', '2025-12-19T06:30:00.000Z'],
    ['2025-12-19T08:30:00-0130', '2025-12-19T10:00:00.000Z'],
    ['2025-12-19 08:30:00+00:00', '2025-12-19T08:30:00.000Z'],
  ])('%s → %s', (text, expected) => {
    expect(parseDateText(text, NOW)?.toISOString()).toBe(expected);
  });

  test.each(['2025-02-30', '2025-13-01', '2025-12-19T24:00:00Z', 'yesterday', '19/12/2025'])('%p is no date', (text) => {
    expect(parseDateText(text, NOW)).toBeNull();
  });
});

describe('parsePropertyDate', () => {
  test.each([
    [1836277747, '2028-03-10T05:09:07.000Z'],
    ['1836277747', '2028-03-10T05:09:07.000Z'],
    [1836277747.86753, '2028-03-10T05:09:07.868Z'],
    ['2028-03-10T05:09:07Z', '2028-03-10T05:09:07.000Z'],
  ])('%p → %s', (value, expected) => {
    expect(parsePropertyDate(value, NOW)?.toISOString()).toBe(expected);
  });

  test.each([[null], [true], [{ at: 1 }], [['2024-01-01']]])('%p is no date', (value) => {
    expect(parsePropertyDate(value, NOW)).toBeNull();
  });
});
