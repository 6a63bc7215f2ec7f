import { describe, expect, test } from 'bun:test';
import { csvField, csvRecord, eventCsvColumns } from '../../../src/core/events/csv';

describe('csvField (RFC 4180)', () => {
  test.each([
    ['plain', 'abc', 'abc'],
    ['comma', 'a,b', '"a,b"'],
    ['quote', 'say "hi"', '"say ""hi"""'],
    ['newline', 'a\nb', '"a\nb"'],
    ['carriage return', 'a\rb', '"a\rb"'],
    ['null', null, ''],
    ['undefined', undefined, ''],
    ['number', 1.5, '1.5'],
    ['boolean', true, 'true'],
    ['object as JSON', { a: 'x,y' }, '"{""a"":""x,y""}"'],
    ['list as JSON', [1, 2], '"[1,2]"'],
    ['empty string', '', ''],
  ] as const)('%s', (_name, value, expected) => {
    expect(csvField(value)).toBe(expected);
  });

  test('records end with CRLF', () => {
    expect(csvRecord(['a', 'b,c', null])).toBe('a,"b,c",\r\n');
  });
});

describe('eventCsvColumns', () => {
  test('the sorted union of fixed, person and property columns, PostHog-style names', () => {
    expect(eventCsvColumns(['plan', '$browser', 'plan', 'Zeta']).map((c) => c.name)).toEqual([
      'distinct_id',
      'elements_chain',
      'event',
      'id',
      'person.distinct_ids.0',
      'person.is_identified',
      'person.properties.email',
      'person.properties.name',
      'person.properties.username',
      'properties.$browser',
      'properties.Zeta',
      'properties.plan',
      'timestamp',
    ]);
  });
});
