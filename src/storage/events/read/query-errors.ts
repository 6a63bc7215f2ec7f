import { queryTimeout } from '../../../core/query';
import { AppError, isAppError } from '../../../errors';
import { isOutOfMemory } from '../../db';

/** DuckDB error classes a request can cause by what it asks for (values, types, ranges). */
const REQUEST_ERRORS = /^(Conversion|Invalid Input|Out of Range|Binder|Mismatch Type|Not implemented|Invalid Type) Error: ?(.*)$/s;

/**
 * A failed statement as the client sees it: errors the request caused are a 400 with DuckDB's
 * first line (never the SQL, which the message may quote after `LINE`); an interrupt is a 504;
 * running out of DuckDB's memory a 503; anything else stays an internal error (500, logged with
 * its cause by the error handler).
 */
export function translateQueryError(error: unknown, attr: string | null): unknown {
  if (isAppError(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (/^INTERRUPT Error|Interrupted/i.test(message)) return queryTimeout();
  const m = REQUEST_ERRORS.exec(message);
  if (m) {
    const first = (m[2] ?? '').split('\n')[0]!.split(/\bLINE \d+:/)[0]!.trim().slice(0, 300);
    return new AppError('invalid_input', `The query failed: ${m[1]} error${first ? `: ${first}` : ''}`, attr, { cause: error });
  }
  // Large events (up to 1 MiB each) are read 2,048 rows at a time, and parsing their JSON can
  // pass the memory cap: that query fails alone, and the client is told how to narrow it.
  if (isOutOfMemory(error)) {
    return new AppError(
      'unavailable',
      'The query needs more memory than DUCKDB_MEMORY_LIMIT allows (large events): narrow it down (a time range, fewer events, select the columns) and retry.',
      attr,
      { cause: error },
    );
  }
  // The client converts each value to JS; a date outside JS's range (e.g. 'infinity') lands here.
  if (/out of range for JS Date|Invalid time value/i.test(message)) {
    return new AppError('invalid_input', 'The query failed: a date in the result is out of range.', attr, { cause: error });
  }
  return error;
}
