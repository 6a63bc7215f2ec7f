import type { Database, Row } from '../db';
import type { EventsSourceRef } from '../definitions/events-source';
import { createCohortCalculator } from '../cohorts/cohort-calculator';
import { createCohortCopies, type CohortDefinition, type CohortState } from '../cohorts/cohort-copies';
import { createCohortMembers } from '../cohorts/cohort-members';
import type { Cohort, CohortInput, CohortStore } from '../cohorts/types';
import { Params, type Pg, impossibleId } from './client';
import type { Changes } from './changes';

/**
 * Cohort definitions in PostgreSQL; their members and calculation stay with the events they
 * come from (DuckDB), which keeps a copy of each definition (cohorts/cohort-copies.ts). A
 * cohort read here is its definition from PostgreSQL with this server's calculation state.
 * Copies follow every change: this process's own at once, another process's when its
 * notification (`cohorts`) arrives, and all of them at start and after a lost connection; a
 * dynamic cohort new to this server, or changed by another, is calculated here too.
 */

const COLUMNS = 'id, team_id, name, description, groups::text AS groups, filters::text AS filters, deleted, is_static, created_by, created_at';

const toDefinition = (r: Row): CohortDefinition => ({
  id: Number(r.id),
  teamId: Number(r.team_id),
  name: (r.name as string | null) ?? null,
  description: String(r.description ?? ''),
  groups: (JSON.parse(String(r.groups)) as unknown[] | null) ?? [],
  filters: r.filters == null ? null : (JSON.parse(String(r.filters)) as Record<string, unknown> | null),
  deleted: Boolean(r.deleted),
  isStatic: Boolean(r.is_static),
  createdBy: r.created_by == null ? null : Number(r.created_by),
  createdAt: r.created_at as Date,
});

/** A cohort whose copy is not made yet (made at the next read). */
const NO_STATE: CohortState = { isCalculating: false, lastCalculation: null, errorsCalculating: 0, count: null, version: 0, pendingVersion: null };

/** Input field → column and how its value is bound. */
const COLUMN_OF: Record<keyof CohortInput, [string, (value: unknown) => unknown, string]> = {
  name: ['name', (v) => v ?? null, ''],
  description: ['description', (v) => String(v ?? ''), ''],
  groups: ['groups', (v) => JSON.stringify(v ?? []), '::text::json'],
  filters: ['filters', (v) => (v == null ? null : JSON.stringify(v)), '::text::json'],
  deleted: ['deleted', (v) => Boolean(v), ''],
  isStatic: ['is_static', (v) => Boolean(v), ''],
};

const calculable = (d: CohortDefinition) => !d.isStatic && !d.deleted;

export interface PostgresCohortStore extends CohortStore {
  /** Make every copy match PostgreSQL (at start, and when notifications may have been missed). */
  resync(): Promise<void>;
}

export function createPostgresCohortStore(pg: Pg, db: Database, events: EventsSourceRef, changes: Changes, onError: (error: unknown) => void): PostgresCohortStore {
  const copies = createCohortCopies(db);
  const members = createCohortMembers(db, events);
  const calculator = createCohortCalculator(db, events);

  /** Copy definitions; those new to this server that are dynamic are calculated. */
  const copy = async (definitions: CohortDefinition[]) => {
    const added = new Set(await copies.write(definitions));
    for (const d of definitions) if (added.has(d.id) && calculable(d)) void calculator.scheduleCalculation(d.id, new Date());
  };

  /** Definitions with this server's state, copying those that have no copy yet. */
  const withState = async (definitions: CohortDefinition[]): Promise<Cohort[]> => {
    let state = await copies.state(definitions.map((d) => d.id));
    const uncopied = definitions.filter((d) => !state.has(d.id));
    if (uncopied.length) {
      await copy(uncopied);
      state = await copies.state(definitions.map((d) => d.id));
    }
    return definitions.map((d) => ({ ...d, ...(state.get(d.id) ?? NO_STATE) }));
  };

  const definition = async (teamId: number | null, id: number) => {
    if (impossibleId(id)) return null;
    const rows = await pg.query(`SELECT ${COLUMNS} FROM cohorts WHERE id = $1 AND ($2::integer IS NULL OR team_id = $2)`, [id, teamId]);
    return rows.length ? toDefinition(rows[0]) : null;
  };

  const getCohort = async (teamId: number, id: number) => {
    const d = await definition(teamId, id);
    return d ? (await withState([d]))[0] : null;
  };

  /** Another process changed a cohort (or, without an id, deleted a project's): its copy follows, and it is calculated here too. */
  const changedElsewhere = async (id: number | undefined) => {
    if (id === undefined) return resync();
    const d = await definition(null, id);
    if (!d) return copies.remove([id]);
    await copies.write([d]);
    if (!calculable(d)) return;
    await copies.markCalculating(d.id);
    void calculator.scheduleCalculation(d.id, new Date());
  };

  async function resync() {
    const definitions = (await pg.query(`SELECT ${COLUMNS} FROM cohorts`)).map(toDefinition);
    const kept = new Set(definitions.map((d) => d.id));
    await copies.remove((await copies.list()).filter((c) => !kept.has(c.id)).map((c) => c.id));
    await copy(definitions);
  }

  changes.subscribe('cohorts', (change) => void changedElsewhere(change.id).catch(onError));
  changes.onMissed(() => void resync().catch(onError));

  return {
    ...members,
    ...calculator,
    getCohort,
    resync,

    async listCohorts(teamId, page) {
      const [{ n }] = await pg.query<{ n: string }>('SELECT count(*) AS n FROM cohorts WHERE team_id = $1 AND NOT deleted', [teamId]);
      const rows = await pg.query(`SELECT ${COLUMNS} FROM cohorts WHERE team_id = $1 AND NOT deleted ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`, [
        teamId,
        page.limit,
        page.offset,
      ]);
      return { count: Number(n), results: await withState(rows.map(toDefinition)) };
    },

    async createCohort(teamId, input, createdBy, now) {
      const p = new Params();
      const columns = ['team_id', 'created_by', 'created_at'];
      const values = [p.add(teamId), p.add(createdBy), p.add(now)];
      for (const key of Object.keys(COLUMN_OF) as Array<keyof CohortInput>) {
        if (input[key] === undefined) continue;
        const [column, encode, cast] = COLUMN_OF[key];
        columns.push(column);
        values.push(p.add(encode(input[key])) + cast);
      }
      const d = await pg.transaction(async (tx) => {
        const [row] = await tx.query(`INSERT INTO cohorts (${columns.join(', ')}) VALUES (${values.join(', ')}) RETURNING ${COLUMNS}`, p.values);
        const created = toDefinition(row);
        await changes.publish(tx, { kind: 'cohorts', teamId, id: created.id });
        return created;
      });
      // As the DuckDB store: a dynamic cohort starts calculating; the caller schedules it.
      await copies.write([d]);
      if (!d.isStatic) await copies.markCalculating(d.id);
      return (await withState([d]))[0];
    },

    async updateCohort(teamId, id, patch) {
      const p = new Params();
      const sets: string[] = [];
      for (const key of Object.keys(COLUMN_OF) as Array<keyof CohortInput>) {
        if (patch[key] === undefined) continue;
        const [column, encode, cast] = COLUMN_OF[key];
        sets.push(`${column} = ${p.add(encode(patch[key]))}${cast}`);
      }
      const d = await pg.transaction(async (tx) => {
        const where = `WHERE id = ${p.add(id)} AND team_id = ${p.add(teamId)}`;
        const rows = sets.length
          ? await tx.query(`UPDATE cohorts SET ${sets.join(', ')} ${where} RETURNING ${COLUMNS}`, p.values)
          : await tx.query(`SELECT ${COLUMNS} FROM cohorts ${where}`, p.values);
        if (rows.length) await changes.publish(tx, { kind: 'cohorts', teamId, id });
        return rows.length ? toDefinition(rows[0]) : null;
      });
      if (d) {
        await copies.write([d]);
        // PostHog recalculates a live dynamic cohort on every update.
        await copies.markCalculating(d.id);
      }
      return (await getCohort(teamId, id))!;
    },

    async deleteTeam(teamId) {
      const removed = await pg.transaction(async (tx) => {
        const rows = await tx.query<{ id: number }>('DELETE FROM cohorts WHERE team_id = $1 RETURNING id', [teamId]);
        await changes.publish(tx, { kind: 'cohorts', teamId });
        return rows.map((r) => Number(r.id));
      });
      const local = (await copies.list()).filter((c) => c.teamId === teamId).map((c) => c.id);
      await copies.remove([...new Set([...removed, ...local])]);
    },
  };
}
