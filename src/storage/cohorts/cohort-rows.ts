import type { Database, Row, SqlParam } from '../db';
import type { Cohort, CohortInput, CohortStore } from './types';

/** Cohort rows: create, read, update. Membership lives in `cohort-members.ts`. */

const parseJson = (value: unknown): unknown => (typeof value === 'string' ? JSON.parse(value) : (value ?? null));

export const toCohort = (r: Row): Cohort => ({
  id: Number(r.id),
  teamId: Number(r.team_id),
  name: (r.name as string | null) ?? null,
  description: String(r.description ?? ''),
  groups: (parseJson(r.groups) as unknown[] | null) ?? [],
  filters: parseJson(r.filters) as Record<string, unknown> | null,
  deleted: Boolean(r.deleted),
  isStatic: Boolean(r.is_static),
  isCalculating: Boolean(r.is_calculating),
  createdBy: r.created_by == null ? null : Number(r.created_by),
  createdAt: r.created_at as Date,
  lastCalculation: (r.last_calculation as Date | null) ?? null,
  errorsCalculating: Number(r.errors_calculating),
  count: r.count == null ? null : Number(r.count),
  version: Number(r.version),
  pendingVersion: r.pending_version == null ? null : Number(r.pending_version),
});

/** Input field → column and how its value is stored. */
const COLUMNS: Record<keyof CohortInput, [string, (value: unknown) => SqlParam]> = {
  name: ['name', (v) => (v ?? null) as SqlParam],
  description: ['description', (v) => String(v ?? '')],
  groups: ['groups', (v) => JSON.stringify(v ?? [])],
  filters: ['filters', (v) => (v == null ? null : JSON.stringify(v))],
  deleted: ['deleted', (v) => Boolean(v)],
  isStatic: ['is_static', (v) => Boolean(v)],
};

const assignments = (input: CohortInput) =>
  (Object.keys(COLUMNS) as Array<keyof CohortInput>)
    .filter((key) => input[key] !== undefined)
    .map((key) => ({ column: COLUMNS[key][0], value: COLUMNS[key][1](input[key]) }));

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
      const set = assignments(input);
      const columns = ['team_id', 'created_by', 'created_at', 'is_calculating', ...set.map((a) => a.column)];
      const values: SqlParam[] = [teamId, createdBy, now, !input.isStatic, ...set.map((a) => a.value)];
      const rows = await db.transaction((tx) =>
        tx.query(`INSERT INTO cohorts (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')}) RETURNING *`, values),
      );
      return toCohort(rows[0]);
    },

    async updateCohort(teamId, id, patch) {
      const set = assignments(patch);
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
