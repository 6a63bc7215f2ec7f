import type { EventStoreLogger } from '../types';

/**
 * How long appends must stay below the saturation rate before DuckDB gets its threads back:
 * each change relaunches DuckDB's workers, so a load that dips for a moment does not flap it.
 */
export const WIDEN_AFTER_MS = 2_000;

/**
 * DuckDB's worker threads while ingestion saturates the store. The request thread and the parser
 * threads are then busy full time, and DuckDB's own workers on top of them oversubscribe the
 * cores: a load's COPY and the persons' merges cost more CPU an event, not less, and fewer events
 * are stored (see bench/NOTES.md). So while the store is saturated DuckDB keeps to the cores those
 * threads leave (`Settings.saturatedThreads`), and gets its own count back once appends have
 * stayed below the saturation rate for WIDEN_AFTER_MS. Queries run meanwhile share the narrower
 * DuckDB: the machine's cores are taken either way.
 */
export class SaturatedThreads {
  private narrowed = false;
  private quietSince: number | null = null;
  /** Changes are applied one after the other, so the last one asked for is the one that holds. */
  private applying: Promise<void> = Promise.resolve();

  constructor(
    /** Sets DuckDB's threads (null: its own count again). */
    private readonly apply: (threads: number | null) => Promise<void>,
    /** The count while saturated; null: never narrowed. */
    private readonly narrowTo: number | null,
    private readonly log: EventStoreLogger,
  ) {}

  /** Called on every tick with whether the store is saturated now, and the store's clock. */
  note(saturated: boolean, now: number): void {
    if (this.narrowTo === null) return;
    if (saturated) {
      this.quietSince = null;
      if (!this.narrowed) this.set(true);
      return;
    }
    if (!this.narrowed) return;
    this.quietSince ??= now;
    if (now - this.quietSince >= WIDEN_AFTER_MS) this.set(false);
  }

  /** Resolves once the changes asked for so far are applied. */
  settled(): Promise<void> {
    return this.applying;
  }

  /** DuckDB's own count again, if narrowed (the store closes). */
  release(): Promise<void> {
    if (this.narrowed) this.set(false);
    return this.applying;
  }

  private set(narrow: boolean): void {
    this.narrowed = narrow;
    this.quietSince = null;
    const threads = narrow ? this.narrowTo : null;
    this.applying = this.applying.then(() =>
      this.apply(threads).catch((error: unknown) => this.log.warn('could not change DuckDB threads', { threads, error: String(error) })),
    );
  }
}

/** The cores a saturating ingestion leaves DuckDB: those the request and parser threads do not take, at least one. */
export const threadsLeft = (cores: number, busyThreads: number): number => Math.max(1, Math.floor(cores) - Math.floor(busyThreads));
