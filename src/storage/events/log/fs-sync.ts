import { closeSync, fsyncSync, openSync } from 'node:fs';

function syncPath(path: string, flags: 'r' | 'r+'): void {
  const fd = openSync(path, flags);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** fsync a directory, so a rename or a new file in it survives a power loss. */
export const syncDir = (dir: string): void => syncPath(dir, 'r');

/** fsync a file by path. */
export const syncFile = (path: string): void => syncPath(path, 'r+');
