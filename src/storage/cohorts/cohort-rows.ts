import type { Database, SqlParam } from '../db';
import { cohortAssignments, toCohort } from './cohort-columns';
import type { CohortStore } from './types';

/** Cohort rows: create, read, update. Membership lives in `cohort-members.ts`. */

type CohortRowStore = Pick<CohortStore, 'listCohorts' | 'getCohort' | 'createCohort' | 'updateCohort'>;

export function createCohortRows(db: Database): CohortRowStore {
  const getCohort = async (teamId: number, id: number) => {
    const rows = await db.query('SELECT * FROM cohorts WHERE id = ? AND team_id = ?', [id, teamId]);
    return rows.length ? toCohort(rows[0]) : null;
  };

  return {
    getCohort,

    async listCohorts(teamId, page) {
      const [{ n }] = await db.query<{ n: number }>('SELECT count(*) AS n FROM cohorts WHERE team_id = ? AND NOT deleted', [teamId]);
      const rows = await db.query('SELECT * FROM cohorts WHERE team_id = ? AND NOT deleted ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?', [
        teamId,
        page.limit,
        page.offset,
      ]);
      return { count: n, results: rows.map(toCohort) };
    },

    async createCohort(teamId, input, createdBy, now) {
      const set = cohortAssignments(input);
      const columns = ['team_id', 'created_by', 'created_at', 'is_calculating', ...set.map((a) => a.column)];
      const values: SqlParam[] = [teamId, createdBy, now, !input.isStatic, ...set.map((a) => a.value)];
      const rows = await db.transaction((tx) =>
        tx.query(`INSERT INTO cohorts (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')}) RETURNING *`, values),
      );
      return toCohort(rows[0]);
    },

    async updateCohort(teamId, id, patch) {
      const set = cohortAssignments(patch);
      await db.transaction(async (tx) => {
        if (set.length) {
          await tx.run(`UPDATE cohorts SET ${set.map((a) => `${a.column} = ?`).join(', ')} WHERE id = ? AND team_id = ?`, [
            ...set.map((a) => a.value),
            id,
            teamId,
          ]);
        }
        // PostHog recalculates a live dynamic cohort on every update.
        await tx.run('UPDATE cohorts SET is_calculating = true WHERE id = ? AND team_id = ? AND NOT deleted AND NOT is_static', [id, teamId]);
      });
      return (await getCohort(teamId, id))!;
    },
  };
}
