import { DuckDBInstance, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import { AppError } from '../errors';

export type SqlParam = string | number | boolean | null | bigint | Date;
export type Row = Record<string, unknown>;

/**
 * One DuckDB instance per database file. Writes go through one connection, serialized, so a
 * transaction is never interleaved with another write; reads use a small pool of their own
 * connections and run concurrently with writes (DuckDB's MVCC gives them a consistent snapshot).
 */
export interface Database {
  readonly path: string;
  /** Run a read query and return its rows as plain JS objects (BIGINT → number, TIMESTAMP → Date). */
  query<T = Row>(sql: string, params?: readonly SqlParam[]): Promise<T[]>;
  /**
   * Run a read query and hand its rows to `each` a chunk at a time (as `query` converts them),
   * never holding the whole result: for results that would weigh on memory held whole, twice
   * (DuckDB's and the rows'), such as a project's persons. One of the read connections is held
   * until the last chunk is handed over, `each` included; if `each` throws, the rest of the result
   * is dropped (the connection's next statement replaces it) and the call rejects with that error.
   */
  queryChunks<T = Row>(sql: string, params: readonly SqlParam[], each: (rows: T[]) => void): Promise<void>;
  /** Run a statement on the write connection. */
  run(sql: string, params?: readonly SqlParam[]): Promise<void>;
  /** Run `fn` inside one transaction on the write connection; rolls back if it throws. */
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /** Borrow the exclusive write connection (for appenders and bulk loads). */
  withWriter<T>(fn: (connection: DuckDBConnection) => Promise<T>): Promise<T>;
  /** Borrow a read connection (for streaming results, and for work that holds one connection for several statements). */
  withReader<T>(fn: (connection: DuckDBConnection) => Promise<T>): Promise<T>;
  /**
   * DuckDB's worker threads from now on: one setting for the whole database (statements running
   * meanwhile go on with the new count). Null: the count it was opened with, which is also the
   * most it is given.
   */
  setThreads(threads: number | null): Promise<void>;
  close(): Promise<void>;
}

export interface Tx {
  query<T = Row>(sql: string, params?: readonly SqlParam[]): Promise<T[]>;
  run(sql: string, params?: readonly SqlParam[]): Promise<void>;
}

/** Raised when another process (normally the running server) holds the database file. */
export class DatabaseLockedError extends Error {
  constructor(path: string, cause: unknown) {
    super(`The database ${path} is in use by another process (is the server running?). Stop it first.`, { cause });
    this.name = 'DatabaseLockedError';
  }
}

export interface OpenOptions {
  /** DuckDB worker threads; defaults to DuckDB's own choice. */
  threads?: number;
  /** DuckDB's memory cap, e.g. '2GB' (DuckDB's own default is 80% of RAM). */
  memoryLimit?: string;
  /** Where DuckDB spills when over the cap. */
  tempDirectory?: string;
  readers?: number;
}

export async function openDatabase(path: string, options: OpenOptions = {}): Promise<Database> {
  const config: Record<string, string> = {
    // Checkpoints stall the calling thread for seconds; the event store runs them itself.
    checkpoint_threshold: '1GB',
    // Memory a load or a query freed goes back to the system soon after it ends, instead of
    // staying with DuckDB's allocator until the next one reuses it: under a sustained load the
    // server's resident size follows what is in use (see bench/NOTES.md).
    allocator_background_threads: 'true',
    allocator_flush_threshold: '16MB',
    // A partitioned COPY (a load's Parquet files) writes out each thread's rows every few row
    // groups instead of holding up to half a million of them (DuckDB's default) until the end.
    partitioned_write_flush_threshold: '16384',
    // DuckDB's copy of the Parquet bytes it reads grew with every file the loads' dedupe, merges
    // and queries read, inside the process's resident size and beside the OS's page cache, which
    // holds the same bytes outside it; reads measured no slower without it (see bench/NOTES.md).
    enable_external_file_cache: 'false',
  };
  if (options.threads) config.threads = String(options.threads);
  if (options.memoryLimit) config.memory_limit = options.memoryLimit;
  if (options.tempDirectory) config.temp_directory = options.tempDirectory;
  let instance: DuckDBInstance;
  try {
    instance = await DuckDBInstance.create(path, config);
  } catch (error) {
    if (error instanceof Error && /lock/i.test(error.message)) throw new DatabaseLockedError(path, error);
    throw error;
  }
  // Every timestamp is UTC; the query compiler's date handling relies on a UTC session.
  const connect = async () => {
    const c = await instance.connect();
    await c.run("SET TimeZone = 'UTC'");
    return c;
  };
  const writer = await connect();
  // DuckDB keeps no footers of the Parquet files it reads either (off by default; said here so a
  // changed default cannot turn it on): that cache has no size of its own, a merged-away file's
  // footer stays in it, and the memory it takes is several times what DuckDB counts against its
  // cap, so it grew with every file ever read (see bench/NOTES.md). A setting of the Parquet
  // extension, which DuckDB loads on first use, so not one of the options above.
  await writer.run('SET GLOBAL parquet_metadata_cache = false');
  const openedThreads = Number((await readRows(writer, "SELECT current_setting('threads') AS threads", []))[0]?.threads);
  const readers: DuckDBConnection[] = [];
  for (let i = 0; i < (options.readers ?? 4); i++) readers.push(await connect());
  const idleReaders = [...readers];
  const readerWaiters: Array<(c: DuckDBConnection) => void> = [];
  let writeChain: Promise<unknown> = Promise.resolve();
  let closed = false;

  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = writeChain.then(fn, fn);
    writeChain = next.catch(() => undefined);
    return next;
  };

  const acquireReader = async (): Promise<DuckDBConnection> => {
    const c = idleReaders.pop();
    if (c) return c;
    return new Promise((resolve) => readerWaiters.push(resolve));
  };
  const releaseReader = (c: DuckDBConnection) => {
    const waiter = readerWaiters.shift();
    if (waiter) waiter(c);
    else idleReaders.push(c);
  };

  const db: Database = {
    path,
    async query<T>(sql: string, params: readonly SqlParam[] = []) {
      const c = await acquireReader();
      try {
        return (await readRows(c, sql, params)) as T[];
      } finally {
        releaseReader(c);
      }
    },
    async queryChunks<T>(sql: string, params: readonly SqlParam[], each: (rows: T[]) => void) {
      const c = await acquireReader();
      try {
        const result = await c.stream(sql, toValues(params));
        for await (const chunk of result.yieldRowObjectJs()) if (chunk.length) each(chunk.map(normalizeRow) as T[]);
      } finally {
        releaseReader(c);
      }
    },
    run: (sql, params = []) =>
      exclusive(async () => {
        await writer.run(sql, toValues(params));
      }),
    transaction: (fn) =>
      exclusive(async () => {
        await writer.run('BEGIN TRANSACTION');
        const tx: Tx = {
          query: async <T>(sql: string, params: readonly SqlParam[] = []) => (await readRows(writer, sql, params)) as T[],
          run: async (sql, params = []) => {
            await writer.run(sql, toValues(params));
          },
        };
        try {
          const result = await fn(tx);
          await writer.run('COMMIT');
          return result;
        } catch (error) {
          await writer.run('ROLLBACK').catch(() => undefined);
          throw error;
        }
      }),
    withWriter: (fn) => exclusive(() => fn(writer)),
    async withReader(fn) {
      const c = await acquireReader();
      try {
        return await fn(c);
      } finally {
        releaseReader(c);
      }
    },
    setThreads(threads) {
      const count = threads === null ? openedThreads : Math.max(1, Math.min(openedThreads, Math.trunc(threads)));
      if (!Number.isSafeInteger(count)) return Promise.reject(new Error(`unexpected thread count ${threads}`));
      return db.withReader(async (c) => {
        await c.run(`SET threads = ${count}`);
      });
    },
    async close() {
      if (closed) return;
      closed = true;
      await exclusive(async () => undefined);
      for (const c of readers) c.closeSync();
      writer.closeSync();
      instance.closeSync();
    },
  };
  return db;
}

async function readRows(c: DuckDBConnection, sql: string, params: readonly SqlParam[]): Promise<Row[]> {
  const reader = await c.runAndReadAll(sql, toValues(params));
  return reader.getRowObjectsJS().map(normalizeRow);
}

function toValues(params: readonly SqlParam[]): DuckDBValue[] {
  return params.map((p) => (p instanceof Date ? p.toISOString() : p)) as DuckDBValue[];
}

/** BIGINT/HUGEINT come back as bigint; everything we store fits a double, so hand out numbers. */
function normalizeRow(row: Record<string, unknown>): Row {
  for (const key in row) {
    const v = row[key];
    if (typeof v === 'bigint') row[key] = Number(v);
  }
  return row;
}

/** Run `fn` inside one transaction on a connection already borrowed (`withWriter`); rolls back if it throws. */
export async function inTransaction<T>(c: DuckDBConnection, fn: () => Promise<T>): Promise<T> {
  await c.run('BEGIN TRANSACTION');
  try {
    const out = await fn();
    await c.run('COMMIT');
    return out;
  } catch (error) {
    await c.run('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/** What the engine's buffer manager holds in memory, and what it spilled to its temporary directory (bytes). */
export interface MemoryUsage {
  usedBytes: number;
  spilledBytes: number;
  limitBytes: number;
  /**
   * `usedBytes` by what holds it, in the engine's own words lowercased (`base_table`,
   * `order_by`, `object_cache`, ...; kinds holding nothing are left out): what an operator
   * needs to see to tell which work fills the cap.
   */
  byKind: Record<string, number>;
}

export async function memoryUsage(db: Database): Promise<MemoryUsage> {
  const rows = await db.query<{ tag: string; used: number; spilled: number; cap: string }>(
    "SELECT tag, memory_usage_bytes AS used, temporary_storage_bytes AS spilled, current_setting('memory_limit') AS cap FROM duckdb_memory()",
  );
  const byKind: Record<string, number> = {};
  let usedBytes = 0;
  let spilledBytes = 0;
  for (const r of rows) {
    usedBytes += Number(r.used);
    spilledBytes += Number(r.spilled);
    if (Number(r.used) > 0) byKind[String(r.tag).toLowerCase()] = Number(r.used);
  }
  return { usedBytes, spilledBytes, limitBytes: parseByteSize(String(rows[0]?.cap ?? '')), byKind };
}

const UNITS: Record<string, number> = { bytes: 1, KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30, TiB: 2 ** 40, KB: 1e3, MB: 1e6, GB: 1e9, TB: 1e12 };

/** DuckDB's rendering of a size setting ("488.2 MiB") in bytes, to the precision it shows; NaN when unreadable. */
function parseByteSize(text: string): number {
  const m = /^([\d.]+)\s*(\w+)$/.exec(text.trim());
  const unit = m ? UNITS[m[2]] : undefined;
  return m && unit ? Math.round(Number(m[1]) * unit) : Number.NaN;
}

/** Translate a DuckDB constraint failure into the API's `unique` error; rethrow anything else. */
export function translateConstraintError(error: unknown, detail: string, attr: string): never {
  if (error instanceof Error && /constraint|duplicate key/i.test(error.message)) {
    throw new AppError('unique', detail, attr);
  }
  throw error;
}

/** DuckDB refused a statement for lack of memory under its cap (`DUCKDB_MEMORY_LIMIT`). */
export const isOutOfMemory = (error: unknown): boolean => /^Out of Memory Error/.test(error instanceof Error ? error.message : String(error));
