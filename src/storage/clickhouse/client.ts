import { Readable } from 'node:stream';
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { AppError } from '../../errors';
import { clickhouseDialect, clickhouseFeatures, queryTimeout, type ClickHouseFeatures, type Dialect, type SqlFragment } from '../../core/query';
import { TabSeparatedReader } from './result-rows';

/**
 * One ClickHouse database over its HTTP interface (`@clickhouse/client`), for the events when
 * EVENTS_STORE names one. Statements come as fragments built with `dialect` (values bound), which
 * the server's version chose (the three spellings that differ on 18.16, core/query's ClickHouse
 * dialect) and which renders them for the client. Whatever the
 * server or the connection answers as an error leaves this module as an `AppError`: nothing of
 * ClickHouse's messages reaches the API.
 */
export interface ClickHouse {
  readonly version: string;
  readonly features: ClickHouseFeatures;
  /** How statements for this server are written: values bound with `dialect.bind`. */
  readonly dialect: Dialect;
  /** A table of this database, qualified (chDB's client is bound to no database). */
  table(name: string): string;
  query<T = Record<string, unknown>>(statement: SqlFragment): Promise<T[]>;
  command(statement: SqlFragment): Promise<void>;
  /**
   * A read statement's rows in chunks, typed as DuckDB's rows are (see result-rows.ts). Aborting
   * `signal` closes the request, which stops the statement on the server; a failure the request
   * caused is a 400 naming `attr`.
   */
  stream(statement: SqlFragment, options?: { signal?: AbortSignal; attr?: string | null }): AsyncIterableIterator<Array<Record<string, unknown>>>;
  /**
   * `INSERT INTO table (columns) FORMAT TabSeparated` (the table as `table()` gives it) with `rows` as its data: one INSERT, which
   * ClickHouse writes as one block per partition.
   */
  insertTabSeparated(table: string, columns: readonly string[], rows: string | Iterable<string> | AsyncIterable<string>): Promise<void>;
  close(): Promise<void>;
}

/** Where the events database is: `clickhouse://[USER[:PASSWORD]@]HOST:PORT/DATABASE` (HTTP port). */
export interface ClickHouseTarget {
  url: string;
  username: string;
  password: string;
  database: string;
}

export function parseClickHouseUrl(value: string): ClickHouseTarget {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new AppError('invalid_input', 'Not a URL: expected clickhouse://[USER[:PASSWORD]@]HOST:PORT/DATABASE.');
  }
  if (url.protocol !== 'clickhouse:') throw new AppError('invalid_input', `Expected a clickhouse:// URL, not ${url.protocol}//.`);
  if (!url.hostname || !url.port) throw new AppError('invalid_input', 'The URL needs a host and the HTTP port (clickhouse://HOST:PORT/DATABASE).');
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(database)) throw new AppError('invalid_input', 'The URL needs a database name (letters, digits, _) as its path.');
  return {
    url: `http://${url.hostname.includes(':') ? `[${url.hostname}]` : url.hostname}:${url.port}`,
    username: decodeURIComponent(url.username) || 'default',
    password: decodeURIComponent(url.password),
    database,
  };
}

/** Whether the error is the connection's (refused, reset, timed out), not the server's answer. */
function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (typeof code === 'string' && /^E[A-Z]+$/.test(code)) || (error instanceof Error && /socket hang up|timeout/i.test(error.message));
}

/**
 * The client's own read timeout (`request_timeout`, longer than the statements' time limit): the
 * server was reached but gave nothing for that long, so the statement ran past its limit.
 */
const isReadTimeout = (error: unknown): boolean => error instanceof Error && error.message === 'Timeout error.';

/** Seconds a client waits before retrying when the events database does not answer. */
const RETRY_AFTER_S = 5;

/**
 * ClickHouse's error codes a request can cause by what it asks for (values, types, ranges, a
 * pattern): CANNOT_PARSE_*, ILLEGAL_TYPE_OF_ARGUMENT, TYPE_MISMATCH, ARGUMENT_OUT_OF_BOUND,
 * CANNOT_CONVERT_TYPE, ILLEGAL_DIVISION, VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE, NO_COMMON_TYPE,
 * DECIMAL_OVERFLOW, CANNOT_COMPILE_REGEXP, BAD_ARGUMENTS, TOO_LARGE_ARRAY_SIZE.
 */
const REQUEST_ERRORS = new Set([6, 27, 36, 38, 41, 43, 53, 69, 70, 72, 128, 153, 321, 386, 407, 427]);
const TIMEOUT_EXCEEDED = 159;
const MEMORY_LIMIT_EXCEEDED = 241;
/** KILL QUERY by an operator, or the server shutting down: the statement itself was fine. */
const QUERY_WAS_CANCELLED = 394;

/** The server's error code: the client's parsed `code`, or the `Code: N` that 18.16's messages (which it does not parse) start with. */
function serverCode(error: unknown): number | null {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^\d+$/.test(code)) return Number(code);
  const m = error instanceof Error ? /^Code: (\d+)/.exec(error.message) : null;
  return m ? Number(m[1]) : null;
}

/**
 * An error as the API's: an unreachable server is 503 with Retry-After; a statement the request
 * made fail (a value of the wrong type, out of range) a 400 naming `attr`; the server's time limit,
 * or the client's read timeout, a 504; its memory limit, or a statement the server cancelled (an
 * operator's KILL QUERY, a restart), a 503 with Retry-After; anything else a 500 that keeps the
 * cause for the log. No detail quotes the server, whose messages name tables and SQL.
 */
export function translateClickHouseError(error: unknown, attr: string | null = null): AppError {
  if (error instanceof AppError) return error;
  // The server's answer first: its "Timeout exceeded" is the statement's time limit, not the connection's.
  const code = serverCode(error);
  if (code === null && isReadTimeout(error)) return queryTimeout();
  if (code === null && isConnectionError(error)) {
    return new AppError('unavailable', 'The events database is not reachable; retry later.', null, { retryAfter: RETRY_AFTER_S, cause: error });
  }
  if (code !== null && REQUEST_ERRORS.has(code)) {
    return new AppError('invalid_input', 'The query failed: the events database could not compute it for these values (a type that does not fit, or a value out of range).', attr, { cause: error });
  }
  if (code === TIMEOUT_EXCEEDED) return queryTimeout();
  if (code === QUERY_WAS_CANCELLED) {
    return new AppError('unavailable', 'The events database cancelled the query (stopped by its operator, or restarting); retry later.', null, { retryAfter: RETRY_AFTER_S, cause: error });
  }
  if (code === MEMORY_LIMIT_EXCEEDED) {
    return new AppError('unavailable', 'The query needs more memory than the events database allows: narrow it down (a time range, fewer events) and retry.', attr, { cause: error });
  }
  return new AppError('error', 'The events database failed the statement.', null, { cause: error });
}

/** Statements' time limit: the server stops a statement after it (it answers the HTTP request then). */
const STATEMENT_TIMEOUT_S = 60;

/**
 * Connect, make the database when it is missing, and read the server's version. `client`
 * instead of a target: a client made elsewhere (tests pass chDB's in-process one), used as it
 * is and left open (its maker closes it).
 */
export async function openClickHouse(source: ClickHouseTarget | { client: ClickHouseClient; database: string }): Promise<ClickHouse> {
  const client =
    'client' in source
      ? source.client
      : createClient({
          url: source.url,
          username: source.username,
          password: source.password,
          database: source.database,
          request_timeout: (STATEMENT_TIMEOUT_S + 10) * 1000,
          log: { level: ClickHouseLogLevel.OFF },
          // An INSERT into a Distributed events table (schema.ts) answers once every shard has its
          // rows, not once they are queued on this server: the writer acknowledges the log after it.
          clickhouse_settings: { max_execution_time: STATEMENT_TIMEOUT_S, insert_distributed_sync: 1 },
        });
  const database = source.database;
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(database)) throw new AppError('invalid_input', 'A ClickHouse database name is letters, digits and _.');
  const run = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (error) {
      throw translateClickHouseError(error);
    }
  };
  const queryText = async <T>(sql: string, params: Record<string, unknown>) =>
    run(async () => {
      const result = await client.query({ query: sql, format: 'JSONEachRow', ...(Object.keys(params).length ? { query_params: params } : {}) });
      return (await result.json()) as T[];
    });
  // The database itself first (18.16 has no CREATE DATABASE through a client bound to it).
  if ('url' in source) {
    const admin = createClient({ url: source.url, username: source.username, password: source.password, log: { level: ClickHouseLogLevel.OFF } });
    try {
      await run(() => admin.command({ query: `CREATE DATABASE IF NOT EXISTS ${database}` }));
    } finally {
      await admin.close();
    }
  } else {
    await run(() => client.command({ query: `CREATE DATABASE IF NOT EXISTS ${database}` }));
  }
  const [{ version }] = await queryText<{ version: string }>('SELECT version() AS version', {});
  const features = clickhouseFeatures(version!);
  const dialect = clickhouseDialect(features);
  const rendered = (statement: SqlFragment) => {
    const { sql, params } = dialect.render(statement);
    return { sql, params: params as Record<string, unknown> };
  };
  return {
    version: version!,
    features,
    dialect,
    table: (name) => `${database}.${name}`,
    query: <T>(statement: SqlFragment) => {
      const { sql, params } = rendered(statement);
      return queryText<T>(sql, params);
    },
    command: (statement) =>
      run(async () => {
        const { sql, params } = rendered(statement);
        await client.command({ query: sql, ...(Object.keys(params).length ? { query_params: params } : {}) });
      }),
    stream: (statement, options = {}) => streamRows(client, rendered(statement), options),
    insertTabSeparated: (table, columns, rows) =>
      run(async () => {
        const body = typeof rows === 'string' ? Readable.from([rows]) : Readable.from(rows);
        const result = await client.exec({ query: `INSERT INTO ${table} (${columns.join(', ')}) FORMAT TabSeparated`, values: body });
        // The answer has no rows, but its socket is only free once it is read.
        for await (const _ of result.stream);
      }),
    close: async () => {
      if (!('client' in source)) await client.close();
    },
  };
}

/**
 * Rows of a rendered statement in the chunks the client reads them. The server finishes the
 * statement before it answers (`wait_end_of_query`, its result held in its memory, then its
 * temporary files, meanwhile): a failure then comes as an HTTP error rather than as text inside a body already
 * under way, which a reader could take for the end of a complete result. Exports rely on it:
 * they read a slice of time per statement, so what the server holds is bounded by a slice, and a
 * failure in a later slice cuts the export's body short instead of ending it looking whole.
 */
async function* streamRows(
  client: ClickHouseClient,
  statement: { sql: string; params: Record<string, unknown> },
  options: { signal?: AbortSignal; attr?: string | null },
): AsyncIterableIterator<Array<Record<string, unknown>>> {
  const reader = new TabSeparatedReader();
  try {
    const result = await client.query({
      query: statement.sql,
      format: 'TabSeparatedWithNamesAndTypes',
      ...(Object.keys(statement.params).length ? { query_params: statement.params } : {}),
      ...(options.signal ? { abort_signal: options.signal } : {}),
      clickhouse_settings: { wait_end_of_query: 1 },
    });
    for await (const lines of result.stream()) {
      const rows: Array<Record<string, unknown>> = [];
      for (const line of lines as Array<{ text: string }>) {
        const row = reader.read(line.text);
        if (row) rows.push(row);
      }
      if (rows.length) yield rows;
    }
  } catch (error) {
    throw translateClickHouseError(error, options.attr ?? null);
  }
}
