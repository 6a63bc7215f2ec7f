/** One group commit's write: its frames encoded into as few buffers as can be, and written in order. */
import { writevSync } from 'node:fs';
import { writeAsync, writevAsync } from './fd-io';
import { encodeIntakeFrames, type IntakeParts } from './frames';

/**
 * A buffer of this size is kept for encoding groups' intake frames (a fresh one per group cost
 * every single-event capture request its allocation and page faults); larger groups get their own.
 */
export const SCRATCH_BYTES = 1024 * 1024;

/** The group's frames as buffers in order: runs of intake frames encoded together (the first run into `scratch`). */
export function encodeGroup(items: ReadonlyArray<Buffer | IntakeParts>, scratch: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let run: IntakeParts[] = [];
  let into: Buffer | undefined = scratch;
  const flush = () => {
    if (run.length === 0) return;
    out.push(...encodeIntakeFrames(run, into));
    into = undefined;
    run = [];
  };
  for (const item of items) {
    if (!Buffer.isBuffer(item)) {
      run.push(item);
      continue;
    }
    flush();
    out.push(item);
  }
  flush();
  return out;
}

/** Linux's limit on buffers per writev. */
const IOV_MAX = 1024;

/** Groups up to this size are written from the main thread (a page-cache copy); larger ones in the thread pool. */
export const SYNC_WRITE_MAX_BYTES = 128 * 1024;

/** The buffers still to write after `written` bytes: whole ones dropped, a partly written one cut. */
function dropWritten(pending: Buffer[], written: number): Buffer[] {
  let left = written;
  let i = 0;
  while (i < pending.length && left >= pending[i].length) left -= pending[i++].length;
  const rest = pending.slice(i);
  if (left > 0) rest[0] = rest[0].subarray(left);
  return rest;
}

/**
 * Write the group's frames in order with writev: one syscall for many requests' frames and no
 * concatenated copy (copying a large group cost more main-thread time than the write itself).
 * `inline` writes from the main thread (small groups), else in the thread pool.
 */
export async function writeFully(fd: number, bufs: readonly Buffer[], position: number, inline: boolean): Promise<void> {
  let pending = bufs.slice();
  let at = position;
  while (pending.length > 0) {
    const chunk = pending.length > IOV_MAX ? pending.slice(0, IOV_MAX) : pending;
    const written = inline
      ? writevSync(fd, chunk, at)
      : chunk.length === 1
        ? (await writeAsync(fd, chunk[0], 0, chunk[0].length, at)).bytesWritten
        : await writevAsync(fd, chunk, at);
    if (written <= 0) throw new Error('short write to the event log');
    at += written;
    pending = dropWritten(pending, written);
  }
}
