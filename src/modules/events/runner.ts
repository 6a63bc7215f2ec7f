import { observe, type Histogram } from '../../core/metrics/histogram';
import type { SqlFragment } from '../../core/query';
import { AppError, isAppError } from '../../errors';
import type { Row } from '../../storage/db';
import type { EventStore, EventsRelation, RelationOptions, TimeRange } from '../../storage/events';

/**
 * How the events API runs its statements on the event store: every statement under the time
 * limit, and DuckDB's errors turned into API errors at this one place. A statement past its time
 * limit is answered with 504 at once; aborting its signal makes the store interrupt it on its
 * connection, so it stops using the CPU and the reader too.
 *
 * One runner serves one request: its statements wait once, together, for the project's
 * just-acknowledged events (at most the store's bound), then read what is loaded. Each statement
 * waiting on its own would, under a sustained load, add one bound per statement.
 */
export interface QueryRunnerOptions {
  store: () => EventStore;
  timeoutMs: number;
  /** Where each statement's duration (to its last row, its error or its abandonment) is counted. */
  querySeconds?: Histogram;
}

export class QueryRunner {
  /** Per team, the request's one wait for its just-acknowledged events. */
  private readonly visible = new Map<number, Promise<void>>();

  constructor(private readonly options: QueryRunnerOptions) {}

  private awaitVisible(teamId: number): Promise<void> {
    let wait = this.visible.get(teamId);
    if (!wait) {
      wait = this.options.store().awaitVisible(teamId);
      this.visible.set(teamId, wait);
    }
    return wait;
  }

  async relation(teamId: number, range?: TimeRange, options?: RelationOptions): Promise<EventsRelation> {
    await this.awaitVisible(teamId);
    return this.options.store().eventsRelation(teamId, range, { ...options, wait: false });
  }

  /** The team's rows in `range` as a relation already newest first, or null (see EventStore.newestFirstRelation). */
  async newestFirst(teamId: number, range: TimeRange): Promise<string | null> {
    await this.awaitVisible(teamId);
    return this.options.store().newestFirstRelation(teamId, range, { wait: false });
  }

  /** All rows of a statement (callers bound the row count with LIMIT). */
  async rows(statement: SqlFragment, attr: string | null = null): Promise<Row[]> {
    const out: Row[] = [];
    for await (const chunk of this.stream(statement, attr)) for (const row of chunk) out.push(row);
    return out;
  }

  /** The rows in chunks; each chunk must arrive within the time limit. */
  stream(statement: SqlFragment, attr: string | null = null): AsyncIterableIterator<Row[]> {
    const controller = new AbortController();
    const started = performance.now();
    let timed = false;
    const finished = () => {
      if (timed || !this.options.querySeconds) return;
      timed = true;
      observe(this.options.querySeconds, (performance.now() - started) / 1000);
    };
    let inner: AsyncIterableIterator<Row[]>;
    try {
      inner = this.options.store().streamQuery(statement.sql, statement.params, { signal: controller.signal });
    } catch (error) {
      throw translateQueryError(error, attr);
    }
    const timeoutMs = this.options.timeoutMs;
    const stop = () => {
      controller.abort();
      inner.return?.().catch(() => undefined);
    };
    const iterator: AsyncIterableIterator<Row[]> = {
      async next() {
        const pending = inner.next();
        let timer: ReturnType<typeof setTimeout> | undefined;
        const late = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(timeoutError(timeoutMs)), timeoutMs);
        });
        try {
          const result = await Promise.race([pending, late]);
          if (result.done) finished();
          return result;
        } catch (error) {
          pending.catch(() => undefined);
          finished();
          stop();
          throw translateQueryError(error, attr);
        } finally {
          clearTimeout(timer);
        }
      },
      async return() {
        finished();
        stop();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]() {
        return iterator;
      },
    };
    return iterator;
  }
}

const timeoutError = (ms?: number) =>
  new AppError('query_timeout', `The query did not finish${ms ? ` within ${ms} ms` : ' in time'}. Narrow it down (a time range, fewer events) and retry.`);

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
  if (/^INTERRUPT Error|Interrupted/i.test(message)) return timeoutError();
  const m = REQUEST_ERRORS.exec(message);
  if (m) {
    const first = (m[2] ?? '').split('\n')[0]!.split(/\bLINE \d+:/)[0]!.trim().slice(0, 300);
    return new AppError('invalid_input', `The query failed: ${m[1]} error${first ? `: ${first}` : ''}`, attr, { cause: error });
  }
  // Large events (up to 1 MiB each) are read 2,048 rows at a time, and parsing their JSON can
  // pass the memory cap: that query fails alone, and the client is told how to narrow it.
  if (/^Out of Memory Error/.test(message)) {
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
