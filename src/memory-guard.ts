import type { AppMetrics } from './metrics';

/**
 * The main thread's garbage collected early when the process nears its memory cap.
 *
 * Under saturating batches the main thread's heap and the buffers its objects hold (request
 * bodies, the rows' lines back from the parser thread) swell between JavaScriptCore's own
 * collections, which it schedules by its own heap budget, unaware of DuckDB's memory or of a cap:
 * the resident size swung by hundreds of megabytes within a second, falling back at a full
 * collection, and the tops of those swings made the process's peak (bench/NOTES.md). A
 * collection started when the resident size has passed `triggerBytes` and the main thread holds
 * at least `minGarbageBytes` more than at its lowest since the last collection the guard started
 * (JavaScriptCore's own collections lower that mark too) keeps the swings small. Below the
 * trigger nothing changes; above it with little new garbage (DuckDB's memory, a large live heap)
 * nothing is collected in vain.
 */
export interface MemoryGuardOptions {
  /** Resident size (bytes) past which the guard may collect. */
  triggerBytes: number;
  /** What the main thread's heap and buffers (bytes) must have grown by since their lowest look for a collection to be worth its pause. */
  minGarbageBytes: number;
  /** The process's resident size now (bytes). */
  residentBytes(): number;
  /** The main thread's JavaScript heap in use plus the memory its objects hold outside it (bytes). */
  jsBytes(): number;
  /** A full, synchronous collection of the main thread's heap. */
  collect(): void;
}

export class MemoryGuard {
  /** The lowest `jsBytes()` seen since the last collection this guard started, or right after it. */
  private low = Infinity;

  constructor(private readonly o: MemoryGuardOptions) {}

  /** One look: collects, and says so, when the process is past the trigger with garbage worth collecting. */
  check(): boolean {
    const js = this.o.jsBytes();
    this.low = Math.min(this.low, js);
    if (this.o.residentBytes() <= this.o.triggerBytes || js - this.low < this.o.minGarbageBytes) return false;
    this.o.collect();
    this.low = this.o.jsBytes();
    return true;
  }
}

/** Past this share of the cap the guard may collect: the headroom is for the swing between two looks and a collection's own growth. */
export const TRIGGER_SHARE = 0.8;
/** Above what the main thread holds live under saturating batches, well below its swings (bench/NOTES.md). */
export const MIN_GARBAGE_BYTES = 128 * 1024 * 1024;
/** How often the guard looks (a look reads /proc and the heap's figures: ~20 µs). */
export const CHECK_EVERY_MS = 100;

/**
 * The guard of this process, looking every `CHECK_EVERY_MS` while the process runs (the timer
 * does not keep it alive); `capBytes` is the memory cap the operator set (DUCKDB_MEMORY_LIMIT,
 * as DuckDB reads it back). Its collections are counted in `metrics`.
 */
export function startMemoryGuard(capBytes: number, metrics: AppMetrics): { guard: MemoryGuard; stop: () => void } {
  const guard = new MemoryGuard({
    // A cap DuckDB did not show in a form we read leaves JavaScriptCore to its own schedule.
    triggerBytes: Number.isFinite(capBytes) ? capBytes * TRIGGER_SHARE : Infinity,
    minGarbageBytes: MIN_GARBAGE_BYTES,
    residentBytes: () => process.memoryUsage.rss(),
    jsBytes: () => {
      const m = process.memoryUsage();
      return m.heapUsed + m.external;
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
