/** Appends per 100 ms window from which the store counts as saturated (1,000/s). */
const BUSY_PER_WINDOW = 100;
/**
 * Bytes per 100 ms window from which the store counts as saturated (10 MB/s). Large batches take
 * the machine's cores at a byte rate that depends on the machine: set too high, a sustained load
 * of ~1 MB batches that already took both cores here crossed it only now and then, and DuckDB went
 * back and forth between its narrowed and its full thread count. At the full count a merge's
 * ordered write held hundreds of megabytes of rows waiting for their turn beside the loads, and
 * the process passed 1 GB (see bench/NOTES.md).
 */
const BUSY_BYTES_PER_WINDOW = 1024 * 1024;
const WINDOW_MS = 100;

/**
 * Whether appends arrive at a sustained rate: at least BUSY_PER_WINDOW appends or
 * BUSY_BYTES_PER_WINDOW bytes in the current or the last whole 100 ms window of `now` (the store
 * gives it `performance.now()`: a rate of real requests; the tests their own clock). While they do, background maintenance waits for more work per run and DuckDB keeps to
 * the cores the request threads leave (maintenance.ts, saturated-threads.ts). A window with no
 * append in it ends the run.
 */
export class ArrivalRate {
  private arrivals = 0;
  private bytes = 0;
  private lastWindow = 0;
  private lastWindowBytes = 0;
  private windowStart = Number.NEGATIVE_INFINITY;

  constructor(private readonly now: () => number) {}

  note(bytes: number): void {
    const now = this.now();
    if (now - this.windowStart >= WINDOW_MS) {
      const stale = now - this.windowStart >= 2 * WINDOW_MS;
      this.lastWindow = stale ? 0 : this.arrivals;
      this.lastWindowBytes = stale ? 0 : this.bytes;
      this.arrivals = 0;
      this.bytes = 0;
      this.windowStart = now;
    }
    this.arrivals++;
    this.bytes += bytes;
  }

  saturated(): boolean {
    const now = this.now();
    if (now - this.windowStart >= 2 * WINDOW_MS) return false;
    const current = now - this.windowStart < WINDOW_MS;
    return (
      Math.max(this.arrivals, current ? this.lastWindow : 0) >= BUSY_PER_WINDOW ||
      Math.max(this.bytes, current ? this.lastWindowBytes : 0) >= BUSY_BYTES_PER_WINDOW
    );
  }
}
