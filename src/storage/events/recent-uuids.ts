/**
 * Which event uuids the store has taken lately: open-addressing tables of 32-bit fingerprints,
 * in generations that rotate. "Not seen" is certain; "seen" is wrong about once in 10⁸–10⁹
 * lookups (two uuids sharing both hashes), which costs a load its shortcut, never a duplicate.
 *
 * Rows are added in log order, and every segment and Parquet file written in this process
 * records the oldest generation its rows were added in (`uuidGen`). A load whose rows were all
 * certainly new when added skips the dedupe reads of whatever the filter still covers: files
 * and hot rows whose generation is at least `oldestGeneration`. Everything else (files from
 * before a restart, compacted hot rows, dead-letter replays, recovered segments: generation
 * unknown) is read as before. Memory: ~9 bytes a uuid covered (64 MB at the default), allocated
 * as it fills.
 */
export class RecentUuids {
  private gens: Uint32Array[] = [];
  /** Generations made so far (the newest is number `made - 1`). */
  private made = 0;
  private filled = 0;
  private readonly mask: number;

  constructor(
    private readonly perGeneration = 1_000_000,
    private readonly generations = 8,
  ) {
    let slots = 1;
    while (slots < perGeneration * 2) slots *= 2; // at most half full: short probe runs
    this.mask = slots - 1;
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
    let seen = false;
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

/** The oldest filter generation among things that record one (unknown counts as -Infinity: never covered). */
export const oldestUuidGen = (items: ReadonlyArray<{ uuidGen?: number }>): number => {
  let gen = Infinity;
  for (const x of items) gen = Math.min(gen, x.uuidGen ?? -Infinity);
  return gen;
};
