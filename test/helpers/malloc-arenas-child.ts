// A child process for test/native-malloc.test.ts: counts glibc's malloc arenas (malloc_info's
// heaps) before and after a DuckDB query on four threads, with the arenas capped first when
// asked ("limit"). Prints {"limited", "before", "after"} as JSON.
import { CString, dlopen, FFIType, ptr } from 'bun:ffi';
import { DuckDBInstance } from '@duckdb/node-api';
import { limitMallocArenas } from '../../src/native-malloc';

const libc = dlopen('libc.so.6', {
  open_memstream: { args: [FFIType.ptr, FFIType.ptr], returns: FFIType.ptr },
  malloc_info: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
  fclose: { args: [FFIType.ptr], returns: FFIType.i32 },
});
const arenas = (): number => {
  const text = new BigUint64Array(1);
  const size = new BigUint64Array(1);
  const file = libc.symbols.open_memstream(ptr(text), ptr(size));
  libc.symbols.malloc_info(0, file);
  libc.symbols.fclose(file);
  return (new CString(Number(text[0]) as never).toString().match(/<heap nr=/g) ?? []).length;
};

const limited = process.argv[2] === 'limit' ? limitMallocArenas(1) : null;
const before = arenas();
const db = await (await DuckDBInstance.create(':memory:', { threads: '4' })).connect();
await db.run("SELECT count(DISTINCT s) FROM (SELECT md5(range::VARCHAR) || repeat('x', range % 50) AS s FROM range(2000000))");
console.log(JSON.stringify({ limited, before, after: arenas() }));
