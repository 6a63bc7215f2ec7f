import { rowsLoadedAt, type ParquetFile } from './parquet';
import type { PersonCopy } from './person-copies';

/**
 * Where loaded rows live, as the read path sees it: the Parquet manifest and the segment
 * watermark below which hot rows count as compacted. Replaced as a whole (never mutated), so a
 * relation built from one snapshot is consistent, and every change is made at the moment of
 * the swap from the current value (concurrent loads, compactions and merges never lose files).
 */
export interface TierSnapshot {
  readonly compactedSegment: number;
  readonly files: readonly ParquetFile[];
}

export class Tiers {
  snapshot: TierSnapshot;
  /**
   * Person-clustered copies (replaced as a whole). Kept apart from the snapshot: only person
   * lists read them, each only while all its sources are in the snapshot they read.
   */
  personCopies: readonly PersonCopy[] = [];
  /** Rows loaded into the hot table per segment watermark, not yet compacted. */
  hot: Array<{ seg: number; rows: number; at: number }> = [];
  /**
   * The hot table's rows up to segment `seg` (compacted or not, until purged), with the oldest
   * recent-uuid generation among them (-Infinity: rows the filter never saw).
   */
  hotGens: Array<{ seg: number; uuidGen: number }> = [];

  constructor(snapshot: TierSnapshot) {
    this.snapshot = snapshot;
  }

  get hotRows(): number {
    return this.hot.reduce((n, h) => n + h.rows, 0);
  }

  addFiles(files: readonly ParquetFile[]): void {
    if (files.length > 0) this.snapshot = { ...this.snapshot, files: [...this.snapshot.files, ...files] };
  }

  replaceFiles(gone: readonly ParquetFile[], added: readonly ParquetFile[]): void {
    const paths = new Set(gone.map((f) => f.path));
    this.snapshot = { ...this.snapshot, files: [...this.snapshot.files.filter((f) => !paths.has(f.path)), ...added] };
  }

  /** Files whose property keys are now known, swapped in for their entries (if still registered). */
  setPropertyKeys(files: readonly ParquetFile[]): void {
    const byPath = new Map(files.map((f) => [f.path, f]));
    this.snapshot = { ...this.snapshot, files: this.snapshot.files.map((f) => byPath.get(f.path) ?? f) };
  }

  /** Files found sorted after all: their entries (if still registered) lose `sorted: false`. */
  markSorted(paths: readonly string[]): void {
    const found = new Set(paths);
    this.snapshot = { ...this.snapshot, files: this.snapshot.files.map((f) => (found.has(f.path) ? withoutRunsFlag(f) : f)) };
  }

  /** Registered files whose property keys are not known yet, newest first, up to about `maxRows` rows. */
  unindexedFiles(maxRows: number): ParquetFile[] {
    return this.newestFiles((f) => !f.propertyKeys, maxRows);
  }

  /** Registered files not known to be sorted and not in `checked`, newest first, up to about `maxRows` rows. */
  filesOfUnknownOrder(maxRows: number, checked: ReadonlySet<string>): ParquetFile[] {
    return this.newestFiles((f) => f.sorted === false && !checked.has(f.path), maxRows);
  }

  private newestFiles(keep: (f: ParquetFile) => boolean, maxRows: number): ParquetFile[] {
    const out: ParquetFile[] = [];
    let rows = 0;
    for (const f of this.snapshot.files.filter(keep).sort((a, b) => b.maxTs - a.maxTs)) {
      if (rows > 0 && rows + f.rows > maxRows) break;
      out.push(f);
      rows += f.rows;
    }
    return out;
  }

  dropTeam(teamId: number): void {
    this.snapshot = { ...this.snapshot, files: this.snapshot.files.filter((f) => f.teamId !== teamId) };
    this.personCopies = this.personCopies.filter((c) => c.teamId !== teamId);
  }

  /** Files and person copies unregistered (expired by retention). */
  dropParts(files: readonly ParquetFile[], copies: readonly PersonCopy[]): void {
    const paths = new Set(files.map((f) => f.path));
    const copyPaths = new Set(copies.map((c) => c.path));
    this.snapshot = { ...this.snapshot, files: this.snapshot.files.filter((f) => !paths.has(f.path)) };
    this.personCopies = this.personCopies.filter((c) => !copyPaths.has(c.path));
  }

  /** Hot rows not compacted yet were deleted (by load watermark): counted off the load that holds them. */
  expireHot(deleted: ReadonlyArray<{ seg: number; rows: number }>): void {
    for (const d of deleted) {
      const load = this.hot.find((h) => h.seg >= d.seg);
      if (load) load.rows = Math.max(0, load.rows - d.rows);
    }
    this.hot = this.hot.filter((h) => h.rows > 0);
  }

  /** A team-day's copy, replacing its previous one. */
  setPersonCopy(copy: PersonCopy): void {
    this.personCopies = [...this.personCopies.filter((c) => c.teamId !== copy.teamId || c.day !== copy.day), copy];
  }

  /** Hot rows up to `seg` were deleted. */
  purged(seg: number): void {
    this.hotGens = this.hotGens.filter((h) => h.seg > seg);
  }

  compacted(toSeg: number, files: readonly ParquetFile[]): void {
    this.snapshot = { compactedSegment: toSeg, files: [...this.snapshot.files, ...files] };
    this.hot = this.hot.filter((h) => h.seg > toSeg);
  }

  /**
   * The files (of the given teams, or all) holding rows loaded since `since` (the dedupe window),
   * newest first, up to `maxRows`: by when their rows were loaded (`rowsLoadedAt`), so a merge of
   * files loaded long ago is not taken for new.
   */
  recentFiles(teams: ReadonlySet<number> | null, since: number, maxRows: number): ParquetFile[] {
    const out: ParquetFile[] = [];
    let budget = maxRows;
    for (const f of [...this.snapshot.files].sort((a, b) => rowsLoadedAt(b) - rowsLoadedAt(a))) {
      if (rowsLoadedAt(f) < since || budget <= 0) break;
      if (teams && !teams.has(f.teamId)) continue;
      out.push(f);
      budget -= f.rows;
    }
    return out;
  }
}

const withoutRunsFlag = ({ sorted: _, ...file }: ParquetFile): ParquetFile => file;
