import { Readable } from 'node:stream';
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { AppError } from '../../errors';
import { clickhouseDialect, clickhouseFeatures, type ClickHouseFeatures, type Dialect, type SqlFragment } from '../../core/query';

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

/** Seconds a client waits before retrying when the events database does not answer. */
const RETRY_AFTER_S = 5;

/** An error as the API's: an unreachable server is 503 with Retry-After; anything else a 500 that keeps the cause for the log. */
export function translateClickHouseError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  if (isConnectionError(error)) {
    return new AppError('unavailable', 'The events database is not reachable; retry later.', null, { retryAfter: RETRY_AFTER_S, cause: error });
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
