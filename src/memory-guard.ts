import type { AppMetrics } from './metrics';

export interface MemoryGuardOptions {
  /** Resident size (bytes) past which the guard may collect. */
  triggerBytes: number;
  /** What the main thread's heap and buffers (bytes) must have grown by since their lowest look for a collection to be worth its pause. */
  minGarbageBytes: number;
  /** The process's resident size, and the main thread's JavaScript heap in use plus the memory its objects hold outside it, now (bytes). */
  read(): { residentBytes: number; jsBytes: number };
  /** A full, synchronous collection of the main thread's heap. */
  collect(): void;
  /** Told when the process passes the trigger, and when it is back under it (the parser threads collect more while past). */
  onPastTrigger?(past: boolean): void;
  /** Resident size (bytes) past which memory is tight for a large sort (`tight`); absent: never. */
  tightBytes?: number;
  /** The clock `tight` counts from (ms, monotonic: a window over real looks); absent: performance.now. */
  now?(): number;
}

/**
 * The main thread's garbage collected early when the process nears its memory cap.
 *
 * Under saturating batches the main thread's heap and the buffers its objects hold (request
 * bodies, the rows' lines back from the parser thread) swell between JavaScriptCore's own
 * collections, which it schedules by its own heap budget, unaware of DuckDB's memory or of a cap:
 * the resident size swung by hundreds of megabytes within a second, falling back at a full
 * collection, and the tops of those swings made the process's peak (bench/NOTES.md). A
 * collection started when the resident size has passed `triggerBytes` and the main thread holds
 * at least `minGarbageBytes` more than at its lowest look since the last collection the guard
 * started (JavaScriptCore's own collections lower that mark too) keeps the swings small. Below
 * the trigger nothing changes; above it, collections come at most once per `minGarbageBytes` the
 * main thread gains, so memory past the trigger that is DuckDB's or live is not collected at
 * every look. Its looks also tell whether memory is tight for a large sort (`tight`: past
 * `tightBytes` lately), which CSV and JSON exports ask before they read each large slice (a
 * Parquet export at its start; a ClickHouse store sorts on its own server).
 */
export class MemoryGuard {
  /** The lowest `jsBytes` seen since the last collection this guard started, or right after it. */
  private low = Infinity;
  /** Whether the last look found the process past the trigger. */
  private past = false;
  /** When a look last found the process past `tightBytes`. */
  private tightAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly o: MemoryGuardOptions) {}

  /** Whether a look found the process past `tightBytes` within the last TIGHT_FOR_MS. */
  tight(): boolean {
    return this.clock() - this.tightAt <= TIGHT_FOR_MS;
  }

  private clock(): number {
    return this.o.now ? this.o.now() : performance.now();
  }

  /** One look: collects, and says so, when the process is past the trigger with garbage worth collecting. */
  check(): boolean {
    const { residentBytes, jsBytes } = this.o.read();
    if (residentBytes > (this.o.tightBytes ?? Number.POSITIVE_INFINITY)) this.tightAt = this.clock();
    this.low = Math.min(this.low, jsBytes);
    if (residentBytes > this.o.triggerBytes !== this.past) {
      this.past = !this.past;
      this.o.onPastTrigger?.(this.past);
    }
    if (residentBytes <= this.o.triggerBytes || jsBytes - this.low < this.o.minGarbageBytes) return false;
    this.o.collect();
    this.low = this.o.read().jsBytes;
    return true;
  }
}

/**
 * The process's planned size against DuckDB's cap: DuckDB's share, and as much again for the
 * rest (the main and parser threads' heaps, request bodies and rows in flight, the allocators'
 * spare memory), which under a sustained load held 0.5–0.7 GB beside DuckDB (bench/NOTES.md).
 */
export const BUDGET_PER_CAP = 2;
/** Past this share of the process's budget the guard may collect: the headroom is for the swing between two looks and a collection's own growth. */
export const TRIGGER_SHARE = 0.8;
/** The growth since the lowest look that makes a collection worth its pause: well below the swings seen under saturating batches (bench/NOTES.md). */
export const MIN_GARBAGE_BYTES = 128 * 1024 * 1024;
/** How often the guard looks (a look reads the process's memory figures once). */
export const CHECK_EVERY_MS = 100;

/**
 * Past this share of the process's budget its memory is tight for a large sort: an export then
 * sorts smaller slices (modules/events/export-plan.ts). A full-size slice's sort held most of
 * DuckDB's cap, which a process busy with large batches could not spare beside it.
 */
export const TIGHT_SHARE = 0.6;
/**
 * How long memory stays tight after a look found the process past TIGHT_SHARE: under large
 * batches the resident size swings by hundreds of megabytes within seconds, and a slice read in a
 * dip is sorted in the swings that follow (bench/NOTES.md).
 */
export const TIGHT_FOR_MS = 30_000;

/** The resident size past which exports sort smaller slices, for DuckDB's cap `capBytes` (Infinity: never). */
export function tightFor(capBytes: number): number {
  return budgetShare(capBytes, TIGHT_SHARE);
}

/** The resident size past which the guard may collect, for DuckDB's cap `capBytes`. */
export function triggerFor(capBytes: number): number {
  return budgetShare(capBytes, TRIGGER_SHARE);
}

/** `share` of the process's budget for DuckDB's cap `capBytes`; Infinity for a cap DuckDB did not show in a form we read (JavaScriptCore then keeps its own schedule, and memory is never tight). */
function budgetShare(capBytes: number, share: number): number {
  return Number.isFinite(capBytes) ? capBytes * BUDGET_PER_CAP * share : Infinity;
}

/**
 * The guard of this process, looking every `CHECK_EVERY_MS` while the process runs (the timer
 * does not keep it alive); `capBytes` is DuckDB's memory cap the operator set (DUCKDB_MEMORY_LIMIT,
 * as DuckDB reads it back), from which the process's budget follows. Its collections are counted
 * in `metrics`; `onPastTrigger` hears when the process passes the trigger and when it is back under.
 */
export function startMemoryGuard(capBytes: number, metrics: AppMetrics, onPastTrigger?: (past: boolean) => void): { guard: MemoryGuard; stop: () => void } {
  const guard = new MemoryGuard({
    onPastTrigger,
    triggerBytes: triggerFor(capBytes),
    tightBytes: tightFor(capBytes),
    minGarbageBytes: MIN_GARBAGE_BYTES,
    read: () => {
      const m = process.memoryUsage();
      return { residentBytes: m.rss, jsBytes: m.heapUsed + m.external };
    },
    collect: () => {
      Bun.gc(true);
      metrics.forcedCollections++;
    },
  });
  const timer = setInterval(() => guard.check(), CHECK_EVERY_MS);
  timer.unref();
  return { guard, stop: () => clearInterval(timer) };
}
