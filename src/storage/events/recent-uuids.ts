/**
 * Which event uuids the store has taken lately: open-addressing tables of 32-bit fingerprints,
 * in generations that rotate. "Not seen" is certain; "seen" is wrong about once in 10⁸–10⁹
 * lookups (two uuids sharing both hashes). A load whose rows are all certainly new skips the part
 * of its dedupe check that reads every uuid of the recent Parquet files (with the repeat count
 * within the load, about a quarter of a load's time under sustained ingestion, measured); any
 * other load takes the full check, so a wrong "seen" costs time, never a duplicate.
 *
 * It covers at least the last `(generations - 1) × perGeneration` uuids added (7M by default):
 * more than the recent files (the newest ≤ 2M rows) and the log's backlog (≤ 1 GiB) hold
 * together. It is empty after a restart, and rows can reach the files without passing through
 * it (a dead-letter replay): it is `warm` only once the files registered before that have left
 * the recent window (`minAgeMs` after the start or the last `restart()`); until then every load
 * takes the full check. Memory: ~9 bytes a uuid covered (64 MB at the default), allocated as it
 * fills.
 */
export class RecentUuids {
  private gens: Uint32Array[] = [];
  /** Generations made so far (the newest is number `made - 1`). */
  private made = 0;
  private filled = 0;
  private readonly mask: number;

  private coldUntil: number;

  constructor(
    private readonly perGeneration = 1_000_000,
    private readonly generations = 8,
    private readonly minAgeMs = 0,
  ) {
    this.coldUntil = Date.now() + minAgeMs;
    let slots = 1;
    while (slots < perGeneration * 2) slots *= 2; // at most half full: short probe runs
    this.mask = slots - 1;
  }

  /** True once it covers as many uuids as it promises (not after a restart until then). */
  get warm(): boolean {
    return Date.now() >= this.coldUntil;
  }

  /** The number of the generation the next uuid goes to (numbers only grow). */
  get generation(): number {
    return this.gens.length === 0 || this.filled >= this.perGeneration ? this.made : this.made - 1;
  }

  /**
   * The oldest generation still held: every uuid added in it or a later one is found by
   * `addAll`. Rows added at generation `g ≥ oldestGeneration` are therefore covered, wherever
   * they are now (see `ParquetFile.uuidGen`).
   */
  get oldestGeneration(): number {
    return this.made - this.gens.length;
  }

  /** Rows went to the files without being added here: cold again for `minAgeMs`. */
  restart(): void {
    this.coldUntil = Date.now() + this.minAgeMs;
  }

  /** At start: cold only until the newest file registered before (epoch ms; null: none) leaves the recent window. */
  startAfter(newestFileAt: number | null): void {
    this.coldUntil = newestFileAt === null ? 0 : newestFileAt + this.minAgeMs;
  }

  /**
   * Add the rows' uuids; true when any of them may have been added before (a repeat among them
   * included), false when none certainly was.
   */
  addAll(rows: readonly { uuid: string }[]): boolean {
    let seen = false;
    for (const { uuid } of rows) {
      const at = Bun.hash.cityHash32(uuid) >>> 0;
      const fp = Bun.hash.murmur32v3(uuid) >>> 0 || 1; // 0 marks an empty slot
      for (const gen of this.gens) {
        if (this.find(gen, at, fp) < 0) {
          seen = true;
          break;
        }
      }
      if (this.gens.length === 0 || this.filled >= this.perGeneration) this.rotate();
      const cur = this.gens[this.gens.length - 1];
      const slot = this.find(cur, at, fp);
      if (slot >= 0) {
        cur[slot] = fp;
        this.filled++;
      }
    }
    return seen;
  }

  /** The empty slot where `fp` would go, or -1 when it is there already. */
  private find(gen: Uint32Array, at: number, fp: number): number {
    for (let i = at & this.mask; ; i = (i + 1) & this.mask) {
      const v = gen[i];
      if (v === fp) return -1;
      if (v === 0) return i;
    }
  }

  private rotate(): void {
    this.gens.push(new Uint32Array(this.mask + 1));
    this.made++;
    if (this.gens.length > this.generations) this.gens.shift();
    this.filled = 0;
  }
}
