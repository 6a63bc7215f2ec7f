/**
 * Buffers that row lines are encoded into (a large request's, or a run of small ones'), kept once
 * their lines are written to a processed copy and filled again: a fresh buffer faults in each of
 * its pages as the lines are written, which on a virtual machine cost more than encoding the
 * lines (see bench/NOTES.md). Each thread has its own spares (a module instance each); the main
 * thread's, given back by the processed copies, travel to the parser threads with their next
 * message (`takeSpares`).
 *
 * A buffer given back must be owned by nobody else: the intake processor hands its rows' lines
 * over with them (`EncodedRows.lines`), only buffers of at least POOLED_MIN_BYTES come here, and a
 * buffer that large is always its own allocation (never a slice of a shared pool, as small
 * `Buffer`s are).
 */
/**
 * The smallest buffer kept, and the unit new ones are rounded up to. Processing's runs of small
 * requests make lines of tens to hundreds of KB; kept from this size, their buffers are filled
 * again too (see bench/NOTES.md).
 */
export const POOLED_MIN_BYTES = 64 * 1024;
/**
 * Spares kept a thread, in bytes: two of the largest bodies' lines (a ~19 MB batch's are ~35 MB),
 * or many ~1 MB batches'. Kept while idle too, except while the process is past the memory
 * guard's trigger (`keepSpares`).
 */
const SPARE_BYTES_MAX = 96 * 1024 * 1024;

const spares: ArrayBuffer[] = [];
let spareBytes = 0;
let keeping = true;

/**
 * A buffer of at least `bytes` for lines: the smallest spare that fits, unless it is over twice
 * that (a large spare is kept for large lines), else a new one, rounded up so that it fits later
 * requests of about the size.
 */
export function lineBuffer(bytes: number): Buffer {
  if (bytes < POOLED_MIN_BYTES) return Buffer.allocUnsafe(bytes);
  let best = -1;
  for (let i = 0; i < spares.length; i++) {
    const size = spares[i].byteLength;
    if (size >= bytes && size <= 2 * bytes && (best < 0 || size < spares[best].byteLength)) best = i;
  }
  if (best >= 0) {
    const [spare] = spares.splice(best, 1);
    spareBytes -= spare.byteLength;
    return Buffer.from(spare);
  }
  return Buffer.allocUnsafe(Math.ceil(bytes / POOLED_MIN_BYTES) * POOLED_MIN_BYTES);
}

/** `buffer` is no longer read by anyone: kept to be filled again, if it is a pooled size and there is room. */
export function giveBack(buffer: ArrayBufferLike): void {
  // A moved (detached) buffer has no bytes left: the size test refuses it too.
  if (!keeping || !(buffer instanceof ArrayBuffer) || buffer.byteLength < POOLED_MIN_BYTES) return;
  if (spareBytes + buffer.byteLength > SPARE_BYTES_MAX) return;
  spares.push(buffer);
  spareBytes += buffer.byteLength;
}

/** Every spare, taken out (to move to another thread, which gives them back to its own). */
export function takeSpares(): ArrayBuffer[] {
  const out = spares.splice(0);
  spareBytes = 0;
  return out;
}

/**
 * Whether this thread keeps spares: not while the process is past the memory guard's trigger
 * (the main thread's guard, and each parser thread's `MemoryNote`), when the ones held are dropped.
 */
export function keepSpares(keep: boolean): void {
  keeping = keep;
  if (!keep) takeSpares();
}

/** Spare bytes held (for tests). */
export const spareLineBytes = (): number => spareBytes;
