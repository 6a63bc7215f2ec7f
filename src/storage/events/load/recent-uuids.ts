/**
 * Which event uuids the store has taken lately: open-addressing tables of 32-bit fingerprints,
 * in generations that rotate. "Not seen" is certain; "seen" is wrong about once in 10⁸–10⁹
 * lookups (two uuids sharing both hashes), which costs a load its shortcut, never a duplicate.
 *
 * Rows are added in log order, and every segment and Parquet file written in this process
 * records the oldest generation its rows were added in (`uuidGen`). A load whose rows were all
 * certainly new when added skips the dedupe reads of whatever the filter still covers: files
 * and hot rows whose generation is at least `oldestGeneration` (files compacted from hot rows take
 * the oldest of their loads'). Everything else (files and hot rows from before a restart,
 * dead-letter replays, recovered segments: generation unknown) is read as before. Memory: ~9
 * bytes a uuid covered (64 MB at the default), allocated as it fills, a generation's room at a
 * time (1, 2, 4, then 8 at the default: each step copies what is held).
 */
export class RecentUuids {
  /**
   * Every generation's table in one array, side by side: slot `i` of the generation in column `c`
   * is at `i * cols + c`, so a uuid's home slot in all of them shares a cache line or two (apart,
   * each was a read from memory of its own; see bench/NOTES.md). Generation `g` is in column
   * `g % generations`; columns are added as generations are, then the oldest one's is cleared
   * for the next.
   */
  private table = new Uint32Array(0);
  private cols = 0;
  /** Bit `c` set: column `c` holds a generation still covered. */
  private liveColumns = 0;
  /** Generations made so far (the newest is number `made - 1`). */
  private made = 0;
  private filled = 0;
  private readonly mask: number;

  constructor(
    private readonly perGeneration = 1_000_000,
    private readonly generations = 8,
  ) {
    if (!(generations >= 1 && generations <= 30)) throw new RangeError('generations must be 1–30');
    let slots = 1;
    while (slots < perGeneration * 2) slots *= 2; // at most half full: short probe runs
    this.mask = slots - 1;
  }

  /** The number of the generation the next uuid goes to (numbers only grow). */
  get generation(): number {
    return this.made === 0 || this.filled >= this.perGeneration ? this.made : this.made - 1;
  }

  /**
   * The oldest generation still held: every uuid added in it or a later one is found by
   * `addAll`. Rows added at generation `g ≥ oldestGeneration` are therefore covered, wherever
   * they are now (see `ParquetFile.uuidGen`).
   */
  get oldestGeneration(): number {
    return this.made - Math.min(this.made, this.generations);
  }

  /**
   * Add the rows' uuids; true when any of them may have been added before (a repeat among them
   * included), false when none certainly was.
   */
  addAll(rows: readonly { uuid: string }[]): boolean {
    let seen = false;
    for (const { uuid } of rows) if (this.add(uuid)) seen = true;
    return seen;
  }

  /** `addAll` for the uuids themselves. */
  addUuids(uuids: readonly string[]): boolean {
    let seen = false;
    for (const uuid of uuids) if (this.add(uuid)) seen = true;
    return seen;
  }

  /** Add one uuid; true when it may have been added before. */
  private add(uuid: string): boolean {
    const at = Bun.hash.cityHash32(uuid) >>> 0;
    const fp = Bun.hash.murmur32v3(uuid) >>> 0 || 1; // 0 marks an empty slot
    // Looked up before a rotation drops the oldest generation: it is covered until then.
    const seen = this.holds(at, fp);
    if (this.made === 0 || this.filled >= this.perGeneration) this.rotate();
    const col = (this.made - 1) % this.generations;
    const { table, cols, mask } = this;
    for (let i = at & mask; ; i = (i + 1) & mask) {
      const v = table[i * cols + col];
      if (v === fp) break;
      if (v === 0) {
        table[i * cols + col] = fp;
        this.filled++;
        break;
      }
    }
    return seen;
  }

  /** Whether `fp` is on its probe run from `at` in any covered generation: every run read a row at a time. */
  private holds(at: number, fp: number): boolean {
    const { table, cols, mask } = this;
    let open = this.liveColumns; // columns whose run has not reached an empty slot yet
    for (let i = at & mask; open !== 0; i = (i + 1) & mask) {
      const row = i * cols;
      for (let c = 0; c < cols; c++) {
        if ((open & (1 << c)) === 0) continue;
        const v = table[row + c];
        if (v === fp) return true;
        if (v === 0) open &= ~(1 << c);
      }
    }
    return false;
  }

  private rotate(): void {
    const col = this.made % this.generations;
    if (col >= this.cols) this.widen(Math.min(this.generations, Math.max(col + 1, this.cols * 2)));
    else if (this.made >= this.generations) {
      // The oldest generation's column: cleared for the next.
      for (let i = col; i < this.table.length; i += this.cols) this.table[i] = 0;
    }
    this.made++;
    this.filled = 0;
    this.liveColumns = 0;
    for (let g = this.oldestGeneration; g < this.made; g++) this.liveColumns |= 1 << (g % this.generations);
  }

  /** More columns, the generations so far copied across (only while fewer than `generations`). */
  private widen(cols: number): void {
    const table = new Uint32Array((this.mask + 1) * cols);
    for (let i = 0, from = 0, to = 0; i <= this.mask; i++, from += this.cols, to += cols) {
      for (let c = 0; c < this.cols; c++) table[to + c] = this.table[from + c];
    }
    this.table = table;
    this.cols = cols;
  }
}

/** The oldest filter generation among things that record one (unknown counts as -Infinity: never covered). */
export const oldestUuidGen = (items: ReadonlyArray<{ uuidGen?: number }>): number => {
  let gen = Infinity;
  for (const x of items) gen = Math.min(gen, x.uuidGen ?? -Infinity);
  return gen;
};
