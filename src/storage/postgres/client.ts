import { SQL } from 'bun';
import { AppError } from '../../errors';
import type { Row, SqlParam, Tx } from '../db';

/**
 * One pool of connections to the PostgreSQL database that holds the management data (Bun's
 * built-in client). Statements take `$1`-style placeholders and bound values only. What Bun's
 * client does that callers must know:
 * - `bigint`/`bigserial` and `count(*)` come back as strings: map them with `Number`.
 * - A string bound where the server expects `json` is sent as a JSON *string* value: bind JSON
 *   text as `$n::text::json`.
 * - `json` columns come back parsed (their text's key order kept); `timestamptz` as `Date`.
 * - The server's error code is `errno` ('23505'); `code` is Bun's own ('ERR_POSTGRES_SERVER_ERROR').
 */
export interface Pg {
  query<T = Row>(sql: string, params?: readonly SqlParam[] | readonly unknown[]): Promise<T[]>;
  run(sql: string, params?: readonly SqlParam[] | readonly unknown[]): Promise<void>;
  /**
   * Run `fn` in one transaction; rolls back when it throws. With `retryConflicts`, a transaction
   * PostgreSQL broke off to end a deadlock or a serialization failure is run again from the start
   * (`CONFLICT_ATTEMPTS` in all): `fn` must then keep nothing from an attempt that did not commit.
   */
  transaction<T>(fn: (tx: PgTx) => Promise<T>, options?: { retryConflicts?: boolean }): Promise<T>;
  /**
   * Receive the payloads NOTIFYed on `channel`. `onReconnect` runs when the listening connection
   * came back after a drop: notifications sent meanwhile are lost, so caches must be dropped.
   */
  listen(channel: string, onPayload: (payload: string) => void, onReconnect?: () => void): Promise<void>;
  close(): Promise<void>;
}

export type PgTx = Pick<Pg, 'query' | 'run'>;

/** Connections each server process keeps to PostgreSQL (besides the one that listens). */
const POOL_SIZE = 8;

export async function openPg(url: string): Promise<Pg> {
  const sql = new SQL(url, { max: POOL_SIZE, idleTimeout: 60, connectionTimeout: 10, connection: { TimeZone: 'UTC' } });
  const subscriptions: Array<{ unlisten(): Promise<void> }> = [];
  try {
    await sql.unsafe('SELECT 1');
  } catch (error) {
    await sql.close().catch(() => undefined);
    throw new MetaStoreUnreachableError(url, error);
  }
  const bind = (params: readonly unknown[] | undefined) => (params ?? []) as unknown[];
  return {
    query: async <T>(text: string, params?: readonly unknown[]) => (await sql.unsafe(text, bind(params)).catch(unavailable)) as T[],
    run: async (text, params) => {
      await sql.unsafe(text, bind(params)).catch(unavailable);
    },
    async transaction(fn, options) {
      const once = () =>
        sql.begin((tx) =>
          fn({
            query: async <T>(text: string, params?: readonly unknown[]) => (await tx.unsafe(text, bind(params))) as T[],
            run: async (text, params) => {
              await tx.unsafe(text, bind(params));
            },
          }),
        ) as ReturnType<typeof fn>;
      for (let attempt = 1; ; attempt++) {
        try {
          return await once();
        } catch (error) {
          if (!options?.retryConflicts || attempt >= CONFLICT_ATTEMPTS || !isConflict(error)) unavailable(error);
        }
      }
    },
    async listen(channel, onPayload, onReconnect) {
      let acknowledged = false;
      const subscription = await sql.listen(channel, onPayload, () => {
        if (acknowledged) onReconnect?.();
        acknowledged = true;
      });
      subscriptions.push(subscription);
    },
    async close() {
      for (const s of subscriptions.splice(0)) await s.unlisten().catch(() => undefined);
      await sql.close();
    },
  };
}

/**
 * Bun's client's errors of the connection rather than of a statement, and failed sockets;
 * PostgreSQL's own SQLSTATE classes 08 (connection), 53 (resources) and 57 (shut down, cancelled).
 */
const CONNECTION_ERROR = /^(ERR_POSTGRES_(CONNECTION|IDLE_TIMEOUT|LIFETIME_TIMEOUT|QUERY_CANCELLED|TLS)|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE)/;
const SERVER_UNAVAILABLE = /^(08|53|57)/;

/**
 * Attempts of a transaction that PostgreSQL keeps breaking off as a deadlock's victim or a
 * serialization failure. The other side of a deadlock keeps its locks until it ends, so the next
 * attempt waits for them instead of meeting the same cycle; a few cover the busiest case.
 */
export const CONFLICT_ATTEMPTS = 3;

/** SQLSTATE 40P01 (deadlock_detected) and 40001 (serialization_failure): the transaction did nothing, and may simply run again. */
const isConflict = (error: unknown) => {
  const state = sqlState(error);
  return state === '40P01' || state === '40001';
};

/** Whether a failure is PostgreSQL being away (stopped, restarting, out of connections), not a fault of the statement. */
export function isPgUnavailable(error: unknown): boolean {
  const { code, errno } = (error ?? {}) as { code?: unknown; errno?: unknown };
  return (typeof code === 'string' && CONNECTION_ERROR.test(code)) || (code === 'ERR_POSTGRES_SERVER_ERROR' && SERVER_UNAVAILABLE.test(String(errno)));
}

/**
 * PostgreSQL away is the API's 503 with Retry-After (a client may retry; a capture node whose
 * projects are cached keeps answering 200 meanwhile), not a 500. A transaction cut off at its
 * COMMIT may have committed: the retry meets what it made (a unique violation, a second row) as
 * after any lost answer. Anything else is rethrown as it is.
 */
function unavailable(error: unknown): never {
  if (isPgUnavailable(error)) throw new AppError('unavailable', 'The management database is not available; retry later.', null, { retryAfter: 1, cause: error });
  throw error;
}

/** The database named by META_STORE did not answer (the server refuses to start). */
export class MetaStoreUnreachableError extends Error {
  constructor(url: string, cause: unknown) {
    super(`The management database ${redactUrl(url)} (META_STORE) cannot be reached: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'MetaStoreUnreachableError';
  }
}

/** The URL without its password, for messages and logs. */
export const redactUrl = (url: string) => url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');

/** PostgreSQL's SQLSTATE of a failed statement, when it is one. */
const sqlState = (error: unknown): string | undefined => {
  const errno = error instanceof Error ? (error as Error & { errno?: unknown }).errno : undefined;
  return typeof errno === 'string' ? errno : undefined;
};

export const isUniqueViolation = (error: unknown) => sqlState(error) === '23505';

/** A unique violation becomes the API's `unique` error (as the DuckDB stores give it); anything else is rethrown. */
export function translateUniqueViolation(error: unknown, detail: string, attr: string): never {
  if (isUniqueViolation(error)) throw new AppError('unique', detail, attr);
  throw error;
}

/** Placeholders for a statement built piece by piece: `add(value)` binds it and gives `$n`. */
export class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** PostgreSQL rejects a malformed uuid where DuckDB's TRY_CAST gives NULL: ids from a URL are checked first. */
export const isUuid = (value: string) => UUID.test(value);

/** An id no `integer` column can hold: PostgreSQL refuses it where DuckDB finds nothing, so it is answered as not found first. */
export const impossibleId = (id: number) => !Number.isSafeInteger(id) || id < 1 || id > 2_147_483_647;

/**
 * A statement written with `?` placeholders (the conditions both engines share, e.g. the
 * definitions' filters) with PostgreSQL's `$1, $2, …` instead; quoted text is left as it is.
 */
export function numbered(sql: string): string {
  let out = '';
  let n = 0;
  let quote: string | null = null;
  for (const ch of sql) {
    if (quote) {
      if (ch === quote) quote = null;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
    } else if (ch === '?') {
      out += `$${++n}`;
      continue;
    }
    out += ch;
  }
  return out;
}

/** A transaction that takes statements written with `?` placeholders (the ones both engines share). */
export const questionMarks = (tx: PgTx): Tx => ({
  query: <T>(sql: string, params?: readonly SqlParam[]) => tx.query<T>(numbered(sql), params),
  run: (sql, params) => tx.run(numbered(sql), params),
});
