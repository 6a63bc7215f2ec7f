import type { Database, SqlParam } from '../db';
import { toCohortState } from './cohort-columns';
import type { CohortDefinition, CohortState } from './types';

/**
 * When cohort definitions are kept in another engine (PostgreSQL), each is copied into DuckDB's
 * `cohorts` table, beside the events and members its calculation reads and writes: the
 * calculation, the member listings and the flags' membership lookup run there unchanged, and
 * the row's calculation columns (count, version, …) are the state of this server's members.
 */
export interface CohortCopies {
  /** Make the copies match these definitions; the ids that had no copy yet (made calculating when dynamic and live). */
  write(definitions: CohortDefinition[]): Promise<number[]>;
  /** The calculation state of the copies that exist. */
  state(ids: number[]): Promise<Map<number, CohortState>>;
  /** Every copy's id and project. */
  list(): Promise<Array<{ id: number; teamId: number }>>;
  /** A dynamic, live cohort is marked as calculating (its definition changed). */
  markCalculating(id: number): Promise<void>;
  /** Drop copies and their members. */
  remove(ids: number[]): Promise<void>;
}

const marks = (n: number) => Array(n).fill('?').join(', ');

export function createCohortCopies(db: Database): CohortCopies {
  return {
    async write(definitions) {
      if (!definitions.length) return [];
      return db.transaction(async (tx) => {
        const ids = definitions.map((d) => d.id);
        const existing = new Set((await tx.query<{ id: number }>(`SELECT id FROM cohorts WHERE id IN (${marks(ids.length)})`, ids)).map((r) => r.id));
        const added: number[] = [];
        for (const d of definitions) {
          const values: SqlParam[] = [d.name, d.description, JSON.stringify(d.groups), d.filters == null ? null : JSON.stringify(d.filters), d.deleted, d.isStatic];
          if (existing.has(d.id)) {
            await tx.run('UPDATE cohorts SET name = ?, description = ?, groups = ?, filters = ?, deleted = ?, is_static = ? WHERE id = ?', [...values, d.id]);
            continue;
          }
          await tx.run(
            `INSERT INTO cohorts (name, description, groups, filters, deleted, is_static, id, team_id, created_by, created_at, is_calculating)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
            [...values, d.id, d.teamId, d.createdBy, d.createdAt, !d.isStatic && !d.deleted],
          );
          added.push(d.id);
        }
        return added;
      });
    },

    async state(ids) {
      if (!ids.length) return new Map();
      const rows = await db.query(
        `SELECT id, is_calculating, last_calculation, errors_calculating, count, version, pending_version FROM cohorts WHERE id IN (${marks(ids.length)})`,
        ids,
      );
      return new Map(rows.map((r) => [Number(r.id), toCohortState(r)]));
    },

    async list() {
      return (await db.query<{ id: number; team_id: number }>('SELECT id, team_id FROM cohorts')).map((r) => ({ id: r.id, teamId: r.team_id }));
    },

    async markCalculating(id) {
      await db.run('UPDATE cohorts SET is_calculating = true WHERE id = ? AND NOT deleted AND NOT is_static', [id]);
    },

    async remove(ids) {
      if (!ids.length) return;
      await db.transaction(async (tx) => {
        await tx.run(`DELETE FROM cohort_people WHERE cohort_id IN (${marks(ids.length)})`, ids);
        await tx.run(`DELETE FROM cohorts WHERE id IN (${marks(ids.length)})`, ids);
      });
    },
  };
}
