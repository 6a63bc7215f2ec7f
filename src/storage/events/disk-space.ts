import { statfs } from 'node:fs';
import { promisify } from 'node:util';

const statfsAsync = promisify(statfs);
/** statfs costs ~ms of the main thread in Bun: once a second is plenty (a write that fails for space marks the disk low at once). */
const CHECK_EVERY_MS = 1000;

/** Whether a write error says the disk (or the quota) is full. */
const isDiskFull = (error: unknown): boolean => /ENOSPC|EDQUOT|no space/i.test(String((error as { code?: string } | null)?.code ?? error));

/**
 * The free space of the data directory's disk against the reserve the store keeps
 * (`minFreeDiskBytes`): below it appends are refused (503) until space comes back, and the log
 * makes no file ahead of need.
 */
export class DiskSpace {
  /** Below the reserve at the last check, or since a write failed for space. */
  low = false;
  /** Free bytes at the last check (null: unknown, statfs unsupported). */
  private free: number | null = null;
  private checkedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly dir: string,
    private readonly reserveBytes: number,
    private readonly now: () => number,
  ) {}

  /** Check again when the last check is old enough (the store's tick); the check, if one started. */
  tick(): Promise<void> | null {
    return this.now() - this.checkedAt >= CHECK_EVERY_MS ? this.check() : null;
  }

  async check(): Promise<void> {
    this.checkedAt = this.now();
    try {
      const fs = await statfsAsync(this.dir);
      this.free = fs.bavail * fs.bsize;
      this.low = this.free < this.reserveBytes;
    } catch {
      // statfs unsupported: rely on write errors
    }
  }

  /** Whether `bytes` may be taken ahead of need and leave the reserve whole. */
  mayTake(bytes: number): boolean {
    return !this.low && (this.free === null || this.free - bytes >= this.reserveBytes);
  }

  /** A write failed: whether for space (then the disk counts as low until the next check says otherwise). */
  noteWriteError(error: unknown): boolean {
    const full = isDiskFull(error);
    if (full) this.low = true;
    return full;
  }
}
