import type { Database } from '../../db';
import type { ParquetFile } from './parquet';
import type { PersonCopy } from './person-copies';

/**
 * Retention: a project keeps its events of the last N days. It is applied by whole UTC days, so
 * that dropping costs one manifest change per day partition, never a rewrite of a file: a day
 * goes once all of it is older than N days (so up to N+1 days are kept). Hot rows of those days
 * are deleted with one statement per project.
 */
export const DAY_MS = 86_400_000;

/** Retention in days per project; a project absent keeps its events. */
export type RetentionPolicy = ReadonlyMap<number, number>;

/** Per project, the first day kept (yyyy-mm-dd, UTC): every day before it has ended more than `days` days ago. */
export function keptFrom(policy: RetentionPolicy, now: number): Map<number, string> {
  const out = new Map<number, string>();
  for (const [teamId, days] of policy) {
    const cutoff = Math.floor((now - days * DAY_MS) / DAY_MS) * DAY_MS;
    out.set(teamId, new Date(cutoff).toISOString().slice(0, 10));
  }
  return out;
}

const expired = (kept: ReadonlyMap<number, string>) => (f: { teamId: number; day: string }) => {
  const first = kept.get(f.teamId);
  return first !== undefined && f.day < first;
};

export interface Expired {
  files: ParquetFile[];
  copies: PersonCopy[];
}

/** The registered files and person copies of days before each project's first kept day. */
export function expiredParts(files: readonly ParquetFile[], copies: readonly PersonCopy[], kept: ReadonlyMap<number, string>): Expired {
  const old = expired(kept);
  return { files: files.filter(old), copies: copies.filter(old) };
}

/**
 * Unregister the expired files and copies and delete the hot rows of those days, in one
 * transaction. The files themselves are the caller's to delete, after the grace period:
 * relations built a moment ago may still name them. Returns the hot rows deleted that were not
 * in Parquet yet, by load watermark (compacted ones, waiting for their purge, go too but were
 * counted with their file).
 */
export async function dropExpired(db: Database, parts: Expired, kept: ReadonlyMap<number, string>, compactedSegment: number): Promise<Array<{ seg: number; rows: number }>> {
  const hotRows: Array<{ seg: number; rows: number }> = [];
  await db.transaction(async (tx) => {
    for (const f of parts.files) {
      await tx.run('DELETE FROM event_file_property_keys WHERE path = ?', [f.path]);
      await tx.run('DELETE FROM event_parquet_files WHERE path = ?', [f.path]);
    }
    for (const c of parts.copies) await tx.run('DELETE FROM event_person_files WHERE path = ?', [c.path]);
    for (const [teamId, day] of kept) {
      const old = await tx.query<{ seg: number; n: number }>(
        'SELECT _seg AS seg, count(*) AS n FROM events_hot WHERE team_id = ? AND timestamp < CAST(? AS DATE) GROUP BY _seg',
        [teamId, day],
      );
      if (old.length === 0) continue;
      await tx.run('DELETE FROM events_hot WHERE team_id = ? AND timestamp < CAST(? AS DATE)', [teamId, day]);
      for (const o of old) if (o.seg > compactedSegment) hotRows.push({ seg: Number(o.seg), rows: Number(o.n) });
    }
  });
  return hotRows;
}
