import { expect, test } from 'bun:test';
import { mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DiskSpace } from '../../../src/storage/events/disk-space';

test('the data disk against the reserve: a file made ahead must leave it whole; a write failing for space marks it low until checked again', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'disk-space-'));
  try {
    const fs = statfsSync(dir);
    const free = fs.bavail * fs.bsize;
    const reserve = Math.floor(free / 2);
    let now = 0;
    const disk = new DiskSpace(dir, reserve, () => now);
    expect(disk.mayTake(1)).toBe(true); // unknown before a check: only write errors tell
    await disk.check();
    expect(disk.low).toBe(false);
    expect(disk.mayTake(1024)).toBe(true);
    expect(disk.mayTake(free)).toBe(false);
    expect(disk.noteWriteError(Object.assign(new Error('EIO: i/o error'), { code: 'EIO' }))).toBe(false);
    expect(disk.low).toBe(false);
    expect(disk.noteWriteError(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }))).toBe(true);
    expect(disk.low).toBe(true);
    expect(disk.mayTake(1)).toBe(false);
    // The next check is a second of the store's clock after the last.
    expect(disk.tick()).toBeNull();
    expect(disk.low).toBe(true);
    now += 1000;
    await disk.tick();
    expect(disk.low).toBe(false);
    const full = new DiskSpace(dir, free * 4, () => now);
    await full.check();
    expect(full.low).toBe(true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
