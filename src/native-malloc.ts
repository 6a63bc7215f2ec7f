import { availableParallelism } from 'node:os';

/** mallopt's parameter for the most arenas glibc's malloc makes (malloc.h). */
const M_ARENA_MAX = -8;

/**
 * Caps the arenas of the C library's malloc at `arenas`, from now on; true when it took.
 *
 * DuckDB's own data goes through its allocator, but the rest of its C++ heap (plans, catalog
 * entries, Parquet footers, strings) goes through the C library's malloc, from every DuckDB
 * thread. glibc gives threads up to eight arenas a core, and freed memory stays in each arena's
 * holes rather than going back to the system: under a sustained load the process's mappings of
 * that kind grew from ~150 to ~250 MB over 7 minutes and kept growing, while capped at two
 * arenas they held 57–114 MB (bench/NOTES.md). Other C libraries (musl, macOS) are left as they
 * are: false.
 */
export function limitMallocArenas(arenas: number, library = 'libc.so.6'): boolean {
  if (process.platform !== 'linux') return false;
  try {
    const { dlopen, FFIType } = require('bun:ffi') as typeof import('bun:ffi');
    const libc = dlopen(library, { mallopt: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 } });
    try {
      return libc.symbols.mallopt(M_ARENA_MAX, arenas) === 1;
    } finally {
      libc.close();
    }
  } catch {
    return false;
  }
}

/** The arenas a server process keeps: one a core, as the threads that allocate at once (at least two). */
export const mallocArenas = (): number => Math.max(2, availableParallelism());
