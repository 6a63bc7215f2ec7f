import { describe, expect, test } from 'bun:test';
import { AppError } from '../../../../src/errors';
import { createTestApp } from '../../../helpers/test-app';
import { translateQueryError } from '../../../../src/storage/events/read/query-errors';

describe('translateQueryError', () => {
  test.each([
    ['Conversion Error: Could not convert string \'x\' to INT32\n\nLINE 1: SELECT secret FROM events_hot', 'invalid_input', "The query failed: Conversion error: Could not convert string 'x' to INT32"],
    ['Out of Range Error: timestamp out of range LINE 1: SELECT …', 'invalid_input', 'The query failed: Out of Range error: timestamp out of range'],
    ['Invalid Input Error: Malformed JSON', 'invalid_input', 'The query failed: Invalid Input error: Malformed JSON'],
    ['INTERRUPT Error: Interrupted!', 'query_timeout', 'The query did not finish in time. Narrow it down (a time range, fewer events) and retry.'],
    ['TIMESTAMP value out of range for JS Date: 9223372036854775807 micros', 'invalid_input', 'The query failed: a date in the result is out of range.'],
    [
      'Out of Memory Error: failed to allocate data of size 16.0 MiB (946.6 MiB/953.6 MiB used)',
      'unavailable',
      'The query needs more memory than DUCKDB_MEMORY_LIMIT allows (large events): narrow it down (a time range, fewer events, select the columns) and retry.',
    ],
  ])('%s', (message, kind, detail) => {
    const error = translateQueryError(new Error(message), 'select') as AppError;
    expect({ kind: error.kind, detail: error.detail }).toEqual({ kind: kind as AppError['kind'], detail });
  });

  test('anything else stays an internal error (a 500 whose cause is logged, not shown)', () => {
    const error = new Error('IO Error: No files found that match the pattern');
    expect(translateQueryError(error, 'select')).toBe(error);
  });
});

describe("the store's streamed statements", () => {
  test('fail with the API error, naming the parameter the caller blames', async () => {
    const t = await createTestApp();
    try {
      const rows = t.deps.storage.events.streamQuery("SELECT CAST('x' AS INTEGER) AS n", [], { attr: 'select' });
      const error = await rows.next().catch((e) => e);
      expect(error).toBeInstanceOf(AppError);
      expect({ kind: error.kind, attr: error.attr, detail: error.detail }).toEqual({
        kind: 'invalid_input',
        attr: 'select',
        detail: "The query failed: Conversion error: Could not convert string 'x' to INT32",
      });
    } finally {
      await t.close();
    }
  });
});
