/**
 * Reused encoding buffers. Frames of ~1-2 KB rows encoded into fresh buffers cost a page fault
 * per 4 KB (about half a microsecond a row here); a buffer is lent for one frame and given back
 * once that frame is written. Only frames of a size that pays are lent one (`minBytes`): a small
 * frame must not hold a whole buffer until it is written, and small allocations reuse memory anyway.
 */
export class ScratchPool {
  private free: Buffer[] = [];

  constructor(
    private readonly bytes: number,
    /** Buffers kept between uses, at most. */
    private readonly keep: number,
    private readonly minBytes = 0,
  ) {}

  /** A buffer for a frame of about `estimate` bytes, noted in `lent`; none when it would not pay or fit. */
  borrow(estimate: number, lent: Buffer[]): Buffer | undefined {
    if (estimate < this.minBytes || estimate > this.bytes) return undefined;
    const buf = this.free.pop() ?? Buffer.allocUnsafe(this.bytes);
    lent.push(buf);
    return buf;
  }

  /** Buffers whose frames are written (or given up on). */
  giveBack(bufs: readonly Buffer[]): void {
    for (const b of bufs) if (this.free.length < this.keep) this.free.push(b);
  }
}
