import { describe, expect, test } from 'bun:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { csvField, csvRecord, duckdbCsvField, duckdbJsonString, eventCsvColumns, jsonObjectMembers, spliceCsvRecords } from '../../../src/core/events/csv';

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

describe('spliceCsvRecords', () => {
  // Records as DuckDB writes them: quoted fields with commas, doubled quotes, CR/LF and `#`.
  const records = [
    ['alice', '', '$pageview', 'u1', 'pro', '2024-01-01T00:00:00+00:00'],
    ['"b,o""b"', '"a\r\nb"', '"#x"', 'u2', '"line\nbreak"', '2024-01-02T00:00:00+00:00'],
    ['""', 'chain', 'e', 'u3', '', '2024-01-03T00:00:00+00:00'],
    ['é', '""""', 'e', 'u4', '"x"""', '2024-01-04T00:00:00+00:00'],
  ];
  const input = new TextEncoder().encode(records.map((r) => `${r.join(',')}\r\n`).join(''));
  const insert = (first: string) => new TextEncoder().encode(`,[${first}]`);
  const firstOf = (field: string) => (field.startsWith('"') ? field.slice(1, -1).replaceAll('""', '"') : field);
  const expected = records.map((r) => `${r.slice(0, 4).join(',')},[${firstOf(r[0] as string)}],${r.slice(4).join(',')}\r\n`).join('');
  const text = (b: Uint8Array) => new TextDecoder().decode(b);

  test('puts the text after the first fields of every record, with the first field unquoted', () => {
    const { bytes, consumed } = spliceCsvRecords(input, 4, insert);
    expect(consumed).toBe(input.length);
    expect(text(bytes)).toBe(expected);
    expect(text(bytes)).toContain(',[b,o"b],');
    expect(text(bytes)).toContain(',[],');
  });

  test('a chunk cut anywhere covers its whole records only, and the rest follows from where it stopped', () => {
    for (let cut = 0; cut <= input.length; cut++) {
      const head = spliceCsvRecords(input.subarray(0, cut), 4, insert);
      const tail = spliceCsvRecords(input.subarray(head.consumed), 4, insert);
      expect(head.consumed + tail.consumed).toBe(input.length);
      expect(text(Buffer.concat([head.bytes, tail.bytes]))).toBe(expected);
      // Only whole records: the consumed bytes end a record (or nothing was consumed).
      expect(head.consumed === 0 || (input[head.consumed - 2] === 13 && input[head.consumed - 1] === 10)).toBe(true);
    }
  });

  test('a record with too few fields is an error', () => {
    expect(() => spliceCsvRecords(new TextEncoder().encode('a,b\r\nc,d,e,f\r\n'), 4, insert)).toThrow('fewer than 4 fields');
  });
});

describe('duckdbCsvField (quoting as DuckDB COPY writes it, measured)', () => {
  test.each([
    [null, ''],
    ['', '""'],
    ['plain', 'plain'],
    [' a ', ' a '],
    ['a,b', '"a,b"'],
    ['a"b', '"a""b"'],
    ['a\nb', '"a\nb"'],
    ['a\rb', '"a\rb"'],
    ['#x', '"#x"'],
    ['a#b', '"a#b"'],
    ["a'b;c\tNULL", "a'b;c\tNULL"],
  ] as const)('%p', (value, written) => {
    expect(duckdbCsvField(value)).toBe(written);
  });
});

describe('duckdbJsonString over jsonObjectMembers: what DuckDB\'s json_extract_string gives', () => {
  const PROPERTIES = [
    { s: 'text', e: '', q: 'a,"b"\r\nc', u: 'ünï\u0001\u2028', n: null, t: true, f: false },
    { big: 1e21, small: 1.5e-7, neg: -3, huge: 12345678901234567000, max: 1.7976931348623157e308, tiny: 5e-324, zero: 0 },
    { obj: { '2': 1, b: [1, 2e25, 'é"\\'], '1': { z: null } }, list: [], nested: { a: { b: { c: [null, false] } } } },
    { 'comma,key': 1, 'quote"d': 'x', '': 'empty key', '$set': { email: 'a@b' } },
  ];

  test.each(PROPERTIES.map((p) => [JSON.stringify(p)]))('%s', async (text) => {
    const keys = Object.keys(JSON.parse(text));
    const db = await DuckDBInstance.create(':memory:');
    const connection = await db.connect();
    try {
      const pointers = keys.map((k) => `'/${k.replaceAll('~', '~0').replaceAll('/', '~1').replaceAll("'", "''")}'`);
      const reader = await connection.runAndReadAll(`SELECT json_extract_string(?::JSON, [${pointers.join(', ')}]) AS v`, [text]);
      const expected = (reader.getRowObjectsJson()[0] as { v: Array<string | null> }).v;
      const members = jsonObjectMembers(text);
      expect(keys.map((k) => duckdbJsonString(members.get(k)))).toEqual(expected);
    } finally {
      connection.closeSync();
    }
  });

  test('text with spaces between members (not as JSON.stringify writes it) is read the same', () => {
    const members = jsonObjectMembers(' { "a" : [ 1 , 2e+3 ] , "b" : "x" } ');
    expect([...members.keys()]).toEqual(['a', 'b']);
    expect(duckdbJsonString(members.get('a'))).toBe('[1,2e3]');
    expect(duckdbJsonString(members.get('b'))).toBe('x');
    expect(duckdbJsonString(members.get('missing'))).toBeNull();
  });

  test('anything but an object has no members', () => {
    for (const text of ['', '[1]', '"x"', 'null', '3']) expect(jsonObjectMembers(text).size).toBe(0);
  });
});
