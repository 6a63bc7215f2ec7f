import { describe, expect, test } from 'bun:test';
import { AppError } from '../../../src/errors';
import { translateClickHouseError } from '../../../src/storage/clickhouse/client';
import { TabSeparatedReader, unescapeField } from '../../../src/storage/clickhouse/result-rows';

describe('TabSeparatedWithNamesAndTypes rows', () => {
  const read = (lines: string[]) => {
    const reader = new TabSeparatedReader();
    return lines.map((l) => reader.read(l)).filter((r) => r !== null);
  };

  test('each value read by its column type, as DuckDB rows have them', () => {
    const rows = read([
      'uuid\ttext\tn\tbig\tf\tt\tt64\td\tmaybe\tnothing\tflag\tb',
      "String\tString\tUInt8\tInt64\tFloat64\tDateTime('UTC')\tDateTime64(6, 'UTC')\tDate\tNullable(String)\tNullable(Nothing)\tUInt8\tBool",
      "u1\ttab\\there\\\\ and \\'\\n\t1\t-9007199254740991\t2.5\t2024-01-07 12:00:01\t2024-01-07 12:00:00.123456\t2024-01-07\t\\N\t\\N\t0\ttrue",
      'u2\t\\\\N\t255\t0\tnan\t1970-01-01 00:00:00\t2024-01-07 12:00:00.000000\t1970-01-01\t\\\\N\t\\N\t1\tfalse',
    ]);
    expect(rows).toEqual([
      {
        uuid: 'u1', text: "tab\there\\ and '\n", n: 1, big: -9007199254740991, f: 2.5, t: new Date('2024-01-07T12:00:01Z'),
        t64: new Date('2024-01-07T12:00:00.123Z'), d: new Date('2024-01-07T00:00:00Z'), maybe: null, nothing: null, flag: 0, b: true,
      },
      {
        uuid: 'u2', text: '\\N', n: 255, big: 0, f: Number.NaN, t: new Date(0), t64: new Date('2024-01-07T12:00:00Z'), d: new Date(0),
        maybe: '\\N', nothing: null, flag: 1, b: false,
      },
    ]);
  });

  test('infinities, and a line that is not a row (an error written into the body) throws', () => {
    expect(read(['a\tb', 'Float64\tFloat32', 'inf\t-inf'])).toEqual([{ a: Number.POSITIVE_INFINITY, b: Number.NEGATIVE_INFINITY }]);
    expect(() => read(['a\tb', 'String\tString', 'Code: 53, e.displayText() = DB::Exception: Type mismatch'])).toThrow();
    expect(unescapeField('a\\0b\\bc\\fd\\re')).toBe('a\0b\bc\fd\re');
  });
});

describe('ClickHouse errors as the API answers them', () => {
  const as = (error: unknown, attr: string | null = null) => {
    const e = translateClickHouseError(error, attr);
    return { kind: e.kind as string, detail: e.detail, attr: e.attr };
  };

  test('what the request caused is a 400 naming its parameter (modern codes and 18.16 messages); the rest says nothing of the server', () => {
    const caused = { kind: 'invalid_input', detail: 'The query failed: the events database could not compute it for these values (a type that does not fit, or a value out of range).', attr: 'query' };
    expect(as(Object.assign(new Error('Cannot parse'), { code: '6' }), 'query')).toEqual(caused);
    expect(as(new Error('Code: 53, e.displayText() = DB::Exception: Type mismatch in IN or VALUES section'), 'query')).toEqual(caused);
    expect(as(Object.assign(new Error('Timeout exceeded: elapsed 61 seconds'), { code: '159' }))).toMatchObject({ kind: 'query_timeout' });
    expect(as(Object.assign(new Error('Memory limit (total) exceeded'), { code: '241' }))).toMatchObject({ kind: 'unavailable' });
    expect(as(new Error("Code: 60, e.displayText() = DB::Exception: Table db.events doesn't exist"))).toEqual({ kind: 'error', detail: 'The events database failed the statement.', attr: null });
    expect(as(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }))).toMatchObject({ kind: 'unavailable' });
    const kept = new AppError('invalid_input', 'as it was');
    expect(translateClickHouseError(kept)).toBe(kept);
  });
});
