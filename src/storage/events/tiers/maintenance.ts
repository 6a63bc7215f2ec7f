import { rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Database } from '../../db';
import { compactHot, mergeFiles, pickMerge, type MergePolicy } from './compaction';
import { oldestUuidGen } from '../load/recent-uuids';
import { deleteTeamFiles, parquetRoot, rowsLoadedAt, type ParquetFile } from './parquet';
import { confirmSorted, indexPropertyKeys } from './manifest';
import { deleteTeamCopies, dueCopies, personCopyRoot, writePersonCopy } from './person-copies';
import { dropExpired, expiredParts, keptFrom } from './retention';
import { erasePersonEvents, type ErasedEvents, type PersonMatch } from './erasure';
import { observe } from '../../../core/metrics/histogram';
import type { Counters, Settings } from '../settings';
import type { Tiers } from './tiers';

/**
 * While appends saturate the store, compaction and merges step aside within bounds: each sorts
 * up to a million rows or more on every DuckDB thread, on the cores the requests need (in the
 * ingest bench, single-event rounds after the batch cases took several times the CPU an event
 * of those before; see bench/NOTES.md). Compaction then waits until the hot rows reach this multiple
 * of its threshold (or their age limit) and takes them a threshold at a time; merges wait until a
 * team-day has this multiple of its file count and then take the usual count. Whatever waited
 * runs once the load eases.
 */
const SATURATED_COMPACT_FACTOR = 2;
const SATURATED_MERGE_FACTOR = 4;

/** Whether hot rows are due for compaction now. */
export function compactionDue(hotRows: number, oldestAt: number | null, s: Pick<Settings, 'autoCompact' | 'compactMinRows' | 'compactMaxAgeMs'>, saturated: boolean, now: number): boolean {
  if (!s.autoCompact || hotRows === 0) return false;
  const minRows = saturated ? s.compactMinRows * SATURATED_COMPACT_FACTOR : s.compactMinRows;
  return hotRows >= minRows || (oldestAt !== null && now - oldestAt >= s.compactMaxAgeMs);
}

/**
 * The merge policy in force: a merge takes the policy's file count, the oldest first, however many
 * have gathered (files that waited out a load go in several sorts of the usual size); under
 * saturation only a team-day with many more small files is merged at all.
 */
export function mergePolicy(policy: MergePolicy, saturated: boolean): MergePolicy {
  return { ...policy, minFiles: saturated ? policy.minFiles * SATURATED_MERGE_FACTOR : policy.minFiles, maxFiles: policy.minFiles };
}

/** The segment a compaction run ends at: the load where the hot rows, oldest first, reach `maxRows` (else all loaded). */
export function compactionEnd(hot: ReadonlyArray<{ seg: number; rows: number }>, loaded: number, maxRows: number): number {
  let rows = 0;
  for (const h of hot) {
    rows += h.rows;
    if (rows >= maxRows) return Math.min(loaded, h.seg);
  }
  return loaded;
}

/** Property-key indexing: rows read per batch, and the pause after one (it yields to the rest). */
const INDEX_BATCH_ROWS = 300_000;
const INDEX_SPACING_MS = 1_000;
/** Retention runs at start, soon after a project's retention changes, and at least this often. */
const RETENTION_INTERVAL_MS = 3_600_000;
/** How often DuckDB's WAL is looked at (`checkpointWalBytes`). */
const WAL_CHECK_MS = 5_000;

/**
 * Background upkeep, off the request path and serialized with itself: compaction of hot rows
 * into Parquet (by size or age), merging each team-day's small files, purging hot copies and
 * merged-away files once the grace period has passed (a relation built a moment before the
 * change may still name them), and DuckDB checkpoints, which the store runs itself (DuckDB's
 * automatic ones stall whatever statement crosses the threshold). When nothing else is due, it
 * lists the property keys of files not yet indexed (a bounded batch at a time, spaced out), which
 * CSV exports then take instead of reading every row's JSON for their header, and writes the
 * person-clustered copy of one settled team-day at a time (`person-copies.ts`).
 */
export class Maintenance {
  private chain: Promise<unknown> = Promise.resolve();
  private busy = false;
  private purges: Array<{ seg: number; at: number }> = [];
  /** Files no longer registered (absolute paths), deleted once the grace period has passed. */
  private retired: Array<{ paths: readonly string[]; at: number }> = [];
  /** When DuckDB's WAL was last looked at (`s.now`): the first look is one interval after the store opens. */
  private lastWalCheck: number;
  /** The checkpoint running, if one is. */
  private checkpointing: Promise<void> | null = null;
  private lastIndex = 0;
  /** Files whose order this process has read (`checkOrder`). */
  private readonly orderChecked = new Set<string>();
  /** When retention is next due (`s.now`); 0: now. */
  private retentionDueAt = 0;
  private readonly root: string;

  constructor(
    private readonly db: Database,
    private readonly s: Settings,
    private readonly tiers: Tiers,
    private readonly counters: Counters,
    private readonly store: {
      /** The highest loaded segment: compaction takes hot rows up to it. */
      loadedSegment: () => number;
      /** True while appends saturate the store: compaction and merges wait within bounds, indexing (a read of every row's JSON) waits. */
      saturated: () => boolean;
      /** True while logged segments wait to be processed or loaded: indexing waits for that too (it parses every row's JSON again). */
      backlog: () => boolean;
    },
  ) {
    this.root = parquetRoot(s.dataDir);
    this.lastWalCheck = s.now();
  }

  /** Hot copies of segments up to `seg` are already in Parquet: delete them after the grace period. */
  schedulePurge(seg: number, delayMs = this.s.purgeGraceMs): void {
    this.purges.push({ seg, at: this.s.now() + delayMs });
  }

  /** Apply retention at the next tick (a project's retention changed). */
  scheduleRetention(): void {
    this.retentionDueAt = 0;
  }

  /** Run `fn` after any maintenance in progress, and before the next. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.chain.then(fn, fn);
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** Called periodically: start whatever is due, unless something is already running. */
  tick(): void {
    const now = this.s.now();
    // Small loads and persons' changes land in DuckDB's WAL, and DuckDB holds what it has not
    // checkpointed in memory too: its size is looked at every few seconds even while a merge or
    // a copy runs (minutes under load), beside them rather than after.
    if (now - this.lastWalCheck >= WAL_CHECK_MS) {
      this.lastWalCheck = now;
      void this.checkpoint(false);
    }
    if (this.busy) return;
    const hot = this.tiers.hot;
    const saturated = this.store.saturated();
    const compactDue = compactionDue(this.tiers.hotRows, hot[0]?.at ?? null, this.s, saturated, now);
    const purgeDue = this.purges.some((p) => p.at <= now) || this.retired.some((r) => r.at <= now);
    const retentionDue = this.s.retention !== null && now >= this.retentionDueAt;
    const merge = this.s.autoCompact ? pickMerge(this.tiers.snapshot.files, mergePolicy(this.s.merge, saturated), now) : null;
    const idle = !compactDue && !merge && !saturated && !this.store.backlog() && now - this.lastIndex >= INDEX_SPACING_MS;
    const index = idle ? this.tiers.unindexedFiles(INDEX_BATCH_ROWS) : [];
    const order = idle && index.length === 0 ? this.tiers.filesOfUnknownOrder(INDEX_BATCH_ROWS, this.orderChecked) : [];
    // One copy at a time, when nothing else is due (a day's sort and write takes seconds).
    const copy = idle && index.length === 0 ? (dueCopies(this.tiers.snapshot.files, this.tiers.personCopies, this.s.personCopies, now)[0] ?? null) : null;
    if (!compactDue && !purgeDue && !retentionDue && !merge && index.length === 0 && order.length === 0 && !copy) return;
    this.busy = true;
    void this.exclusive(async () => {
      if (retentionDue) await this.applyRetention();
      if (compactDue) await this.compactHot(this.s.compactMinRows);
      if (merge) await this.merge(merge);
      if (index.length) await this.indexKeys(index);
      if (order.length) await this.checkOrder(order);
      if (copy) await this.copyDays(this.s.personCopies.minAgeMs, 1);
      const purged = await this.purgeDue();
      await this.checkpoint(purged);
    })
      .catch((error) => this.s.log.error('event compaction failed', { error: String(error) }))
      .finally(() => (this.busy = false));
  }

  /** Everything now: compact all hot rows, merge every team-day into one file, purge what is due, checkpoint. */
  runAll(): Promise<void> {
    return this.exclusive(async () => {
      this.busy = true;
      try {
        await this.compactHot();
        const policy = { ...this.s.merge, minAgeMs: 0, minFiles: 2 };
        for (let m = pickMerge(this.tiers.snapshot.files, policy, this.s.now()); m; m = pickMerge(this.tiers.snapshot.files, policy, this.s.now())) await this.merge(m);
        for (let batch = this.tiers.unindexedFiles(INDEX_BATCH_ROWS); batch.length; batch = this.tiers.unindexedFiles(INDEX_BATCH_ROWS)) await this.indexKeys(batch);
        await this.purgeDue();
        await this.checkpoint(true);
      } finally {
        this.busy = false;
      }
    });
  }

  /** Write every person copy due now, the settle age aside (the days must still have ended). Returns how many. */
  buildPersonCopies(): Promise<number> {
    return this.exclusive(() => this.copyDays(0, Number.POSITIVE_INFINITY));
  }

  deleteTeam(teamId: number): Promise<void> {
    return this.exclusive(async () => {
      await this.db.run('DELETE FROM events_hot WHERE team_id = ?', [teamId]);
      await deleteTeamCopies(this.db, this.s.dataDir, teamId);
      await deleteTeamFiles(this.db, this.s.dataDir, teamId, this.tiers.snapshot.files);
      this.tiers.dropTeam(teamId);
    });
  }

  /**
   * Remove a person's events from the hot rows, Parquet files and person copies (erasure.ts),
   * between other upkeep (no merge or copy is working from the files meanwhile). The replaced
   * files are deleted after the grace period, as merged-away ones are; a checkpoint then writes
   * the hot table without the rows.
   */
  erasePerson(teamId: number, match: PersonMatch): Promise<ErasedEvents> {
    return this.exclusive(async () => {
      const started = performance.now();
      const { files, compactedSegment } = this.tiers.snapshot;
      const tiers = { files, copies: this.tiers.personCopies, compactedSegment, loadedSegment: this.store.loadedSegment() };
      const done = await erasePersonEvents(this.db, this.s.dataDir, this.root, tiers, teamId, match, `e${Date.now()}`, this.s.now);
      this.tiers.replaceFiles(done.gone, done.added);
      const copyPaths = new Set(done.copiesGone.map((c) => c.path));
      this.tiers.personCopies = [...this.tiers.personCopies.filter((c) => !copyPaths.has(c.path)), ...done.copiesAdded];
      this.tiers.expireHot(done.hot);
      const copyRoot = personCopyRoot(this.s.dataDir);
      this.retired.push({ paths: [...done.gone.map((f) => join(this.root, f.path)), ...done.copiesGone.map((c) => join(copyRoot, c.path))], at: this.s.now() + this.s.purgeGraceMs });
      await this.checkpoint(true);
      this.s.log.info('person events erased', { project: teamId, ...done.erased, ms: Math.round(performance.now() - started) });
      return done.erased;
    });
  }

  /**
   * Drop the days each project no longer keeps: unregister their files and person copies and
   * delete their hot rows in one transaction, then delete the files after the grace period, as
   * merges do (a relation built a moment ago may still name them).
   */
  private async applyRetention(): Promise<void> {
    this.retentionDueAt = this.s.now() + RETENTION_INTERVAL_MS; // a failure waits for the next run, not the next tick
    const kept = keptFrom(await this.s.retention!(), this.s.now());
    if (kept.size === 0) return;
    const parts = expiredParts(this.tiers.snapshot.files, this.tiers.personCopies, kept);
    const started = performance.now();
    const hot = await dropExpired(this.db, parts, kept, this.tiers.snapshot.compactedSegment);
    this.tiers.dropParts(parts.files, parts.copies);
    this.tiers.expireHot(hot);
    const hotRows = hot.reduce((n, h) => n + h.rows, 0);
    if (parts.files.length === 0 && parts.copies.length === 0 && hotRows === 0) return;
    const copyRoot = personCopyRoot(this.s.dataDir);
    this.retired.push({ paths: [...parts.files.map((f) => join(this.root, f.path)), ...parts.copies.map((c) => join(copyRoot, c.path))], at: this.s.now() + this.s.purgeGraceMs });
    this.counters.expiredFiles += parts.files.length;
    this.counters.expiredHotRows += hotRows;
    const seconds = (performance.now() - started) / 1000;
    this.s.log.info('expired events dropped', { projects: kept.size, files: parts.files.length, rows: sum(parts.files, 'rows') + hotRows, bytes: sum(parts.files, 'bytes'), personCopies: parts.copies.length, hotRows, ms: Math.round(seconds * 1000) });
  }

  /** Write up to `max` due copies (settled for `minAgeMs`), newest day first; the copies they replace retire. */
  private async copyDays(minAgeMs: number, max: number): Promise<number> {
    let written = 0;
    const copyRoot = personCopyRoot(this.s.dataDir);
    while (written < max) {
      this.lastIndex = this.s.now(); // copies are spaced out like indexing batches
      const [job] = dueCopies(this.tiers.snapshot.files, this.tiers.personCopies, { ...this.s.personCopies, minAgeMs }, this.s.now());
      if (!job) break;
      const started = performance.now();
      const copy = await writePersonCopy(this.db, this.root, this.s.dataDir, job, this.s.now);
      this.tiers.setPersonCopy(copy);
      if (job.replaces) this.retired.push({ paths: [join(copyRoot, job.replaces.path)], at: this.s.now() + this.s.purgeGraceMs });
      this.counters.personCopies++;
      this.done('person_copy', started, 'person copy written', { project: job.teamId, day: job.day, sourceFiles: job.files.length, rows: copy.rows, bytes: copy.bytes, replaced: job.replaces !== null });
      written++;
    }
    this.lastIndex = this.s.now();
    return written;
  }

  /**
   * Hot rows to Parquet, oldest loads first, up to about `maxRows` a run (at least one load):
   * rows that waited under saturation go in several bounded sorts, not one of all of them.
   */
  private async compactHot(maxRows = Number.POSITIVE_INFINITY): Promise<void> {
    const from = this.tiers.snapshot.compactedSegment;
    const to = compactionEnd(this.tiers.hot, this.store.loadedSegment(), maxRows);
    if (to <= from) return;
    const started = performance.now();
    const origin = this.hotOrigin(from, to);
    const files = (await compactHot(this.db, this.root, from, to, this.tiers.snapshot.files, this.s.now)).map((f) => ({ ...f, ...origin }));
    this.tiers.compacted(to, files);
    this.schedulePurge(to);
    this.counters.compactions++;
    this.done('compaction', started, 'hot rows compacted to Parquet', { rows: sum(files, 'rows'), files: files.length, bytes: sum(files, 'bytes') });
  }

  /**
   * What compacted files of the hot loads in segments (from, to] stand for, as a load's own file
   * would: the recent-uuid filter generation of their oldest rows (none claimed unless every load
   * has its own in `hotGens`), and when the newest were loaded (not when the files were written).
   */
  private hotOrigin(from: number, to: number): Pick<ParquetFile, 'uuidGen' | 'loadedAt'> {
    const loads = this.tiers.hot.filter((h) => h.seg > from && h.seg <= to);
    if (loads.length === 0) return {};
    const gens = this.tiers.hotGens.filter((h) => h.seg > from && h.seg <= to);
    const loadedAt = Math.max(...loads.map((h) => h.at));
    const known = new Set(gens.map((g) => g.seg));
    return loads.every((h) => known.has(h.seg)) ? { uuidGen: oldestUuidGen(gens), loadedAt } : { loadedAt };
  }

  private async merge(files: ParquetFile[]): Promise<void> {
    const uuidGen = oldestUuidGen(files);
    const loadedAt = Math.max(...files.map(rowsLoadedAt));
    const started = performance.now();
    const merged = (await mergeFiles(this.db, this.root, files, `m${Date.now()}`, this.s.now)).map((f) => ({ ...f, uuidGen, loadedAt }));
    this.tiers.replaceFiles(files, merged);
    this.retired.push({ paths: files.map((f) => join(this.root, f.path)), at: this.s.now() + this.s.purgeGraceMs });
    this.counters.merges++;
    this.done('merge', started, 'Parquet files merged', {
      project: files[0]?.teamId,
      day: files[0]?.day,
      files: files.length,
      rows: sum(files, 'rows'),
      bytes: sum(files, 'bytes'),
      mergedFiles: merged.length,
      mergedBytes: sum(merged, 'bytes'),
    });
  }

  /** A piece of background work finished: timed for the metrics and logged with what it did. */
  private done(work: keyof Counters['workSeconds'], started: number, message: string, fields: Record<string, unknown>): void {
    const seconds = (performance.now() - started) / 1000;
    observe(this.counters.workSeconds[work], seconds);
    this.s.log.info(message, { ...fields, ms: Math.round(seconds * 1000) });
  }

  /** Files merged away meanwhile are skipped by `indexPropertyKeys` and by the swap. */
  private async indexKeys(files: ParquetFile[]): Promise<void> {
    this.lastIndex = this.s.now(); // a failing batch is retried after the pause, not on every tick
    const registered = new Set(this.tiers.snapshot.files.map((f) => f.path));
    const indexed = await indexPropertyKeys(this.db, this.root, files.filter((f) => registered.has(f.path)));
    this.tiers.setPropertyKeys(indexed);
    this.lastIndex = this.s.now();
  }

  /**
   * Files registered as not sorted, read once each per process: those whose rows are newest
   * first after all are registered as sorted (the others are runs, and stay as they are).
   */
  private async checkOrder(files: ParquetFile[]): Promise<void> {
    this.lastIndex = this.s.now();
    for (const f of files) this.orderChecked.add(f.path);
    const registered = new Set(this.tiers.snapshot.files.map((f) => f.path));
    this.tiers.markSorted(await confirmSorted(this.db, this.root, files.filter((f) => registered.has(f.path))));
    this.lastIndex = this.s.now();
  }

  /** Returns whether hot rows were deleted (their space comes back at the next checkpoint). */
  private async purgeDue(): Promise<boolean> {
    const now = this.s.now();
    // A day's directory stays when its last file goes: a load may be renaming a file into it at
    // this moment (a late event of that day). Empty directories go at the next start.
    for (const r of this.retired.filter((x) => x.at <= now)) for (const path of r.paths) await rm(path, { force: true });
    this.retired = this.retired.filter((x) => x.at > now);
    const due = this.purges.filter((p) => p.at <= now);
    if (due.length === 0) return false;
    const seg = Math.max(...due.map((p) => p.seg));
    await this.db.transaction(async (tx) => {
      await tx.run(`DELETE FROM events_hot WHERE _seg <= ${seg}::BIGINT`);
      await tx.run(`UPDATE event_store_state SET purged_segment = greatest(purged_segment, ${seg}::BIGINT) WHERE id = 1`);
    });
    this.purges = this.purges.filter((p) => p.seg > seg);
    this.tiers.purged(seg);
    return true;
  }

  /**
   * CHECKPOINT when forced or when DuckDB's own WAL has grown past the threshold; one at a time
   * (a call while one runs waits for it, then looks again).
   */
  async checkpoint(force: boolean): Promise<void> {
    while (this.checkpointing) await this.checkpointing;
    const run = this.checkpointOnce(force);
    this.checkpointing = run;
    try {
      await run;
    } finally {
      if (this.checkpointing === run) this.checkpointing = null;
    }
  }

  private async checkpointOnce(force: boolean): Promise<void> {
    let walBytes = 0;
    try {
      walBytes = (await stat(`${this.db.path}.wal`)).size;
    } catch {
      walBytes = 0;
    }
    if (!force && walBytes < this.s.checkpointWalBytes) return;
    try {
      await this.db.run('CHECKPOINT');
      this.counters.checkpoints++;
    } catch (error) {
      // DuckDB refuses while another connection writes (a load, a persons flush): usual under
      // load, and the next look (WAL_CHECK_MS) tries again.
      const busy = /other write transactions active/.test(String(error));
      this.s.log[busy ? 'debug' : 'warn']('checkpoint skipped', { error: String(error) });
    }
  }
}

const sum = (files: readonly ParquetFile[], key: 'rows' | 'bytes') => files.reduce((n, f) => n + f[key], 0);
