/**
 * Observations counted into fixed buckets, as a Prometheus histogram is exposed: plain data
 * (no clock, no classes), so storage and the app keep their own and the exposition reads them.
 */
export interface Histogram {
  /** Upper bounds, ascending; +Inf is implied. */
  readonly bounds: readonly number[];
  /** Observations per bucket (not cumulative); one more entry than `bounds`, for +Inf. */
  readonly counts: number[];
  sum: number;
  count: number;
}

/**
 * Seconds, from a millisecond load to a long compaction: wide enough that a p99 alert can tell
 * "slower than usual" from "stuck" for every timed kind of work.
 */
export const SECONDS_BUCKETS: readonly number[] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

export function newHistogram(bounds: readonly number[] = SECONDS_BUCKETS): Histogram {
  return { bounds, counts: new Array<number>(bounds.length + 1).fill(0), sum: 0, count: 0 };
}

export function observe(h: Histogram, value: number): void {
  let i = 0;
  while (i < h.bounds.length && value > h.bounds[i]) i++;
  h.counts[i]++;
  h.sum += value;
  h.count++;
}
