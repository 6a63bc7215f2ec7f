/**
 * The runtime settings the server's process gets in its environment, unless already set
 * (README, Memory): the C libraries read them once, at start, so they cannot be set from the
 * code. `npm start` sets the same in package.json (held by test/server-operations.test.ts); the
 * cluster's nodes and writers and the benches' servers get them from here.
 */
export const RUNTIME_ENV = {
  /** DuckDB's statements and file I/O share Bun's thread pool (src/index.ts). */
  UV_THREADPOOL_SIZE: '16',
  /** glibc's malloc arenas: DuckDB's C++ heap outside its own allocator. */
  MALLOC_ARENA_MAX: '2',
  /** How long Bun's allocator keeps freed pages before giving them back. */
  MIMALLOC_PURGE_DELAY: '1000',
  /** How long DuckDB's allocator keeps freed pages, and its one arena for all threads. */
  DUCKDB_JE_MALLOC_CONF: 'dirty_decay_ms:5000,muzzy_decay_ms:5000,narenas:1',
} as const;

/** `env` with the runtime settings it does not set itself. */
export const withRuntimeEnv = <T extends Record<string, string | undefined>>(env: T): typeof RUNTIME_ENV & T => ({ ...RUNTIME_ENV, ...env });
