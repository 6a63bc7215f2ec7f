import type { PgTx } from './client';

/**
 * Of the projects `teamIds` names, those that still exist, each locked (FOR KEY SHARE) until the
 * transaction ends. A flush writes rows of these projects only: several server processes share
 * the database, and one of them may delete a project while another still holds changes of it.
 *
 * A deletion removes the project's row first and its rows after, in later transactions
 * (storage/index.ts). So a project deleted before the flush gets nothing written back, and one
 * being deleted waits for the flush to commit (DELETE conflicts with the lock), so the removal
 * of its rows that follows finds what the flush wrote. A plain `WHERE EXISTS` would leave a
 * window: the flush reads the project, the other process deletes it and its rows, the flush
 * commits rows that nothing removes.
 */
export async function lockLiveProjects(tx: PgTx, teamIds: Iterable<number>): Promise<Set<number>> {
  const ids = [...new Set(teamIds)];
  if (!ids.length) return new Set();
  const rows = await tx.query<{ id: number }>('SELECT id FROM projects WHERE id = ANY($1::integer[]) ORDER BY id FOR KEY SHARE', [ids]);
  return new Set(rows.map((r) => Number(r.id)));
}
