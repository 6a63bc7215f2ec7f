import { afterEach, describe, expect, test } from 'bun:test';
import { closeSync, writeSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FilesAhead } from '../../../../src/storage/events/log/files-ahead';

const MiB = 1024 * 1024;
let dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
  dirs = [];
});

async function tempDir() {
  const dir = await mkdtemp(join(tmpdir(), 'files-ahead-'));
  dirs.push(dir);
  return dir;
}

/** A last segment of small group commits: 400 KB in 40 writes. */
const SMALL_GROUPS = { bytes: 400 * 1024, writes: 40 };

describe('FilesAhead', () => {
  test('a file of zeros, a quarter larger than the last segment in whole MiB, renamed to the name it is taken under; then the next one may be made', async () => {
    const dir = await tempDir();
    const ahead = new FilesAhead(dir, 64 * MiB);
    ahead.prepare({ bytes: 1.9 * MiB, writes: 100 });
    await ahead.whenPrepared();
    expect(await readdir(dir)).toEqual(['next-1.wal.tmp']);

    const path = join(dir, 'seg-1.wal');
    const taken = await ahead.take(path);
    expect(taken?.size).toBe(3 * MiB); // 1.9 MiB × 1.25 = 2.375 → 3
    expect(await readdir(dir)).toEqual(['seg-1.wal']);
    writeSync(taken!.fd, Buffer.from('frame'), 0, 5, 0); // the descriptor is the renamed file's
    closeSync(taken!.fd);
    const bytes = await readFile(path);
    expect(bytes.length).toBe(3 * MiB);
    expect(bytes.subarray(0, 5).toString()).toBe('frame');
    expect(bytes.subarray(5).every((b) => b === 0)).toBe(true);

    ahead.prepare(SMALL_GROUPS);
    await ahead.whenPrepared();
    expect((await readdir(dir)).sort()).toEqual(['next-2.wal.tmp', 'seg-1.wal']);
    expect((await stat(join(dir, 'next-2.wal.tmp'))).size).toBe(MiB);
    await ahead.close();
    expect(await readdir(dir)).toEqual(['seg-1.wal']);
  });

  test('capped at the segment size; one at a time; nothing to take before one is ready', async () => {
    const dir = await tempDir();
    const ahead = new FilesAhead(dir, 2 * MiB);
    expect(await ahead.take(join(dir, 'seg-1.wal'))).toBeNull();
    ahead.prepare({ bytes: 10 * MiB, writes: 200 });
    ahead.prepare({ bytes: 10 * MiB, writes: 200 }); // under way: not a second one
    await ahead.whenPrepared();
    ahead.prepare(SMALL_GROUPS); // ready and not taken: not a second one either
    await ahead.whenPrepared();
    expect(await readdir(dir)).toEqual(['next-1.wal.tmp']);
    expect((await stat(join(dir, 'next-1.wal.tmp'))).size).toBe(2 * MiB);
    await ahead.close();
  });

  test('not made after a small segment, after large group commits, when the disk cannot spare it, or once closed', async () => {
    const dir = await tempDir();
    const asked: number[] = [];
    const ahead = new FilesAhead(dir, 64 * MiB, (bytes) => (asked.push(bytes), false));
    ahead.prepare({ bytes: 100 * 1024, writes: 10 }); // under 256 KB
    ahead.prepare({ bytes: 4 * MiB, writes: 4 }); // 1 MB a group commit
    ahead.prepare(SMALL_GROUPS); // no room
    await ahead.whenPrepared();
    expect(asked).toEqual([MiB]);

    const open = new FilesAhead(dir, 64 * MiB);
    await open.close();
    open.prepare(SMALL_GROUPS);
    await open.whenPrepared();
    expect(await readdir(dir)).toEqual([]);
  });

  test('a file still being made when closed is removed once done', async () => {
    const dir = await tempDir();
    const ahead = new FilesAhead(dir, 64 * MiB);
    ahead.prepare(SMALL_GROUPS);
    await ahead.close();
    expect(await readdir(dir)).toEqual([]);
    expect(await ahead.take(join(dir, 'seg-1.wal'))).toBeNull();
  });

  test('a file that cannot be renamed to its segment is closed and removed, and none is handed over', async () => {
    const dir = await tempDir();
    const ahead = new FilesAhead(dir, 64 * MiB);
    ahead.prepare(SMALL_GROUPS);
    await ahead.whenPrepared();
    expect(await readdir(dir)).toEqual(['next-1.wal.tmp']);
    expect(await ahead.take(join(dir, 'no-such-dir', 'seg-1.wal'))).toBeNull();
    expect(await readdir(dir)).toEqual([]);
    await ahead.close();
  });
});
