import { describe, expect, test } from 'bun:test';
import { csvLine, parseCohortCsv, parseCsv } from '../../../src/core/cohorts/csv';
import { personCsvHeader, personCsvRow, personDisplayName, type PersonView } from '../../../src/core/cohorts/person-view';

describe('CSV', () => {
  test('parses quotes, doubled quotes, line breaks in fields, CRLF and a BOM', () => {
    expect(parseCsv('\uFEFFa,"b,c"\r\n"say ""hi""","two\nlines"\n')).toEqual([
      ['a', 'b,c'],
      ['say "hi"', 'two\nlines'],
    ]);
  });

  test('writes RFC 4180 lines', () => {
    expect(csvLine(['a', 'b,c', 'say "hi"', null, 3, { k: 1 }, 'two\nlines'])).toBe('a,"b,c","say ""hi""",,3,"{""k"":1}","two\nlines"\r\n');
  });

  test.each([
    ['one column, no header: every row is a distinct id', 'u1\nu2\n\nu2\n', { kind: 'distinct_id', ids: ['u1', 'u2'] }],
    ['a distinct_id header', 'distinct_id\nu1\n', { kind: 'distinct_id', ids: ['u1'] }],
    ['a person_id header', 'person_id\n0190aaaa-0000-0000-0000-000000000000\n', { kind: 'person_id', ids: ['0190aaaa-0000-0000-0000-000000000000'] }],
    ['an email header', 'Email\na@b.c\n', { kind: 'email', ids: ['a@b.c'] }],
    ['several columns: the id column by header', 'name,distinct_id,email\nA,u1,a@b.c\nB,u2\n', { kind: 'distinct_id', ids: ['u1', 'u2'] }],
    ['several columns: person_id preferred', 'email,person_id\na@b.c,p1\n', { kind: 'person_id', ids: ['p1'] }],
  ])('%s', (_, text, expected) => {
    expect(parseCohortCsv(text)).toEqual(expected as never);
  });

  test.each([
    ['', 'CSV file is empty. Please upload a CSV file with at least one row of data.'],
    ['distinct_id\n\n', 'CSV file contains no valid person IDs, distinct IDs, or email addresses. Please ensure your file has data rows with person IDs, distinct IDs, or email addresses.'],
    ['a,b\n1,2\n', expect.stringMatching(/^Multi-column CSV must contain at least one column with a supported ID header/) as never],
  ])('%j is refused', (text, detail) => {
    let error: unknown;
    try {
      parseCohortCsv(text);
    } catch (e) {
      error = e;
    }
    expect(error).toEqual(expect.objectContaining({ kind: 'invalid_input', detail, attr: 'csv' }));
  });
});

describe('persons as listed', () => {
  const person = (properties: Record<string, unknown>, distinctIds: string[]): PersonView => ({
    id: 7,
    uuid: '0190aaaa-0000-0000-0000-000000000000',
    properties,
    createdAt: new Date('2024-01-01T00:00:00.000Z'),
    isIdentified: false,
    distinctIds,
  });

  test.each([
    [{ email: 'a@b.c', name: 'A' }, ['x'], null, 'a@b.c'],
    [{ name: 'A', username: 'u' }, ['x'], null, 'A'],
    [{ username: 'u', email: 'a@b.c' }, ['x'], ['username'], 'u'],
    [{}, ['0190aaaa-0000-0000-0000-000000000001', 'human'], null, 'human'],
    [{}, [], null, '7'],
  ])('name of %j with ids %j (display properties %j) is %j', (properties, ids, display, expected) => {
    expect(personDisplayName(person(properties, ids), display)).toBe(expected);
  });

  test('CSV header and row: email out of the properties, flattened keys, distinct ids by position', () => {
    const header = personCsvHeader(['plan', 'email', 'address', 'plan'], 2);
    expect(header).toEqual(['id', 'email', 'name', 'created_at', 'properties.address', 'properties.plan', 'distinct_ids.0', 'distinct_ids.1']);
    const row = personCsvRow(person({ email: 'a@b.c', address: { city: 'X' } }, ['d1']), 'a@b.c', header);
    expect(row).toEqual([7, 'a@b.c', 'a@b.c', '2024-01-01T00:00:00.000Z', { city: 'X' }, undefined, 'd1', undefined]);
  });
});
