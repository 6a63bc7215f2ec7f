/**
 * The log's calls on file descriptors, as promises (in Bun's thread pool): one place for the
 * group commit (`wal.ts`), its writes (`group-write.ts`) and the segment files made ahead
 * (`files-ahead.ts`).
 */
import { close, closeSync, fdatasync, fsync, ftruncate, open, openSync, write, writev } from 'node:fs';
import { promisify } from 'node:util';

export const openAsync = promisify(open);
export const writeAsync = promisify(write);
export const writevAsync = (fd: number, bufs: readonly Buffer[], position: number) =>
  new Promise<number>((resolve, reject) => writev(fd, bufs as Buffer[], position, (error, n) => (error ? reject(error) : resolve(n))));
export const fdatasyncAsync = promisify(fdatasync);
export const ftruncateAsync = promisify(ftruncate);
export const closeAsync = promisify(close);
const fsyncAsync = promisify(fsync);

/** fsync a directory in the thread pool, so a new name in it survives a power loss. */
export async function syncDirAsync(dir: string): Promise<void> {
  const fd = openSync(dir, 'r');
  try {
    await fsyncAsync(fd);
  } finally {
    closeSync(fd);
  }
}
