import { rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { closeAsync, fdatasyncAsync, openAsync, writeAsync } from './fd-io';

/** A file of zeros made ahead for the next segment. */
interface Ready {
  fd: number;
  path: string;
  size: number;
}

const ZERO_CHUNK = 1024 * 1024;
const PREPARE_MIN_BYTES = 256 * 1024;
const PREPARE_MAX_GROUP_BYTES = 64 * 1024;

/**
 * Durable mode, small groups: the next segment's file made ahead, full of zeros and flushed.
 * Overwriting allocated blocks changes no metadata, so each group's fdatasync flushes data only,
 * no journal commit: a small write and flush takes less time and CPU, and capture over a few
 * connections answers more requests (see bench/NOTES.md). Sized from the last segment (sealed
 * every second or so under load); skipped for large groups, whose flushes are few and whose
 * bytes would be written twice. A crash leaves the zeros after the last frame, which recovery
 * cuts (`scanFrames` tells them from damage), and a file made ahead but never named, which
 * recovery removes.
 */
export class FilesAhead {
  private preparing: Promise<void> | null = null;
  private ready: Ready | null = null;
  private made = 0;
  private closed = false;

  constructor(
    private readonly dir: string,
    private readonly maxBytes: number,
    /** Whether a file of `bytes` may be made now (disk space); absent: yes. */
    private readonly mayPrepare?: (bytes: number) => boolean,
  ) {}

  /** Start making the next file, sized from the last sealed segment, unless one is under way or ready. */
  prepare(last: { bytes: number; writes: number }): void {
    if (this.preparing || this.ready || this.closed) return;
    if (last.bytes < PREPARE_MIN_BYTES || last.bytes / Math.max(1, last.writes) > PREPARE_MAX_GROUP_BYTES) return;
    const size = Math.min(this.maxBytes, Math.ceil((last.bytes * 1.25) / ZERO_CHUNK) * ZERO_CHUNK);
    if (this.mayPrepare && !this.mayPrepare(size)) return;
    const path = join(this.dir, `next-${++this.made}.wal.tmp`);
    this.preparing = (async () => {
      const fd = await openAsync(path, 'wx');
      try {
        const zeros = Buffer.alloc(Math.min(size, ZERO_CHUNK));
        for (let at = 0; at < size; at += zeros.length) await writeAsync(fd, zeros, 0, Math.min(zeros.length, size - at), at);
        await fdatasyncAsync(fd);
      } catch (error) {
        await closeAsync(fd).catch(() => undefined);
        throw error;
      }
      if (this.closed) await discard({ fd, path });
      else this.ready = { fd, path, size };
    })()
      .catch(() => rm(path, { force: true }).catch(() => undefined))
      .finally(() => {
        this.preparing = null;
      });
  }

  /** The file made ahead, renamed to `path`, with the bytes of zeros it holds; null when none is ready (or it could not be renamed). */
  async take(path: string): Promise<{ fd: number; size: number } | null> {
    const ready = this.ready;
    this.ready = null;
    if (!ready) return null;
    try {
      await rename(ready.path, path);
      return { fd: ready.fd, size: ready.size };
    } catch {
      await discard(ready);
      return null;
    }
  }

  /** Resolves once the file being made (if any) is ready or given up. */
  async whenPrepared(): Promise<void> {
    await this.preparing;
  }

  /** No more files: the one being made is removed once done, a ready one now. */
  async close(): Promise<void> {
    this.closed = true;
    await this.whenPrepared();
    const ready = this.ready;
    this.ready = null;
    if (ready) await discard(ready);
  }
}

/** A file made ahead that will not be used: closed and removed. */
async function discard(file: Pick<Ready, 'fd' | 'path'>): Promise<void> {
  await closeAsync(file.fd).catch(() => undefined);
  await rm(file.path, { force: true });
}
