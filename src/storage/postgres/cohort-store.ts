import type { Database } from '../db';
import type { EventsSourceRef } from '../definitions/events-source';
import { createCohortCalculator } from '../cohorts/cohort-calculator';
import { cohortAssignments, toCohortDefinition } from '../cohorts/cohort-columns';
import { createCohortCopies } from '../cohorts/cohort-copies';
import { createCohortMembers, findPersons, replaceStaticMembers, writeStaticMembers } from '../cohorts/cohort-members';
import type { Cohort, CohortDefinition, CohortState, CohortStore } from '../cohorts/types';
import { numbered, type Pg, impossibleId, isUuid } from './client';
import type { Changes } from './changes';

/**
 * Cohort definitions in PostgreSQL, with the members uploaded to static cohorts; a dynamic
 * cohort's members and calculation stay with the events they come from (DuckDB), which keeps a
 * copy of each definition (cohorts/cohort-copies.ts) and of each static cohort's members (the
 * listings and the flags' membership lookup read them there, joined to persons). A cohort read
 * here is its definition from PostgreSQL with this server's calculation state.
 * Copies follow every change: this process's own at once, another process's when its
 * notification (`cohorts`) arrives, and all of them at start and after a lost connection; a
 * dynamic cohort new to this server, or changed by another, is calculated here too; a static
 * one's members are copied again from PostgreSQL.
 */

const COLUMNS = 'id, team_id, name, description, groups::text AS groups, filters::text AS filters, deleted, is_static, created_by, created_at';

/** A cohort whose copy is not made yet (made at the next read). */
const NO_STATE: CohortState = { isCalculating: false, lastCalculation: null, errorsCalculating: 0, count: null, version: 0, pendingVersion: null };

/** A column's placeholder: JSON is bound as text (a string bound as json would be a JSON string). */
const placeholder = (column: string) => (column === 'groups' || column === 'filters' ? '?::text::json' : '?');

const calculable = (d: CohortDefinition) => !d.isStatic && !d.deleted;

export interface PostgresCohortStore extends CohortStore {
  /** Make every copy match PostgreSQL (at start, and when notifications may have been missed). */
  resync(): Promise<void>;
}

export function createPostgresCohortStore(pg: Pg, db: Database, events: EventsSourceRef, changes: Changes, onError: (error: unknown) => void): PostgresCohortStore {
  const copies = createCohortCopies(db);
  const members = createCohortMembers(db, events);
  const calculator = createCohortCalculator(db, events);

  /** A static cohort's members in PostgreSQL, copied beside the persons they are listed with. */
  const copyStaticMembers = async (definitions: CohortDefinition[]) => {
    const fixed = definitions.filter((d) => d.isStatic);
    if (!fixed.length) return;
    const rows = await pg.query<{ cohort_id: number; person_uuid: string }>(
      'SELECT cohort_id, person_uuid::text AS person_uuid FROM cohort_static_people WHERE cohort_id = ANY($1::integer[])',
      [fixed.map((d) => d.id)],
    );
    const byCohort = new Map<number, string[]>(fixed.map((d) => [d.id, []]));
    for (const r of rows) byCohort.get(Number(r.cohort_id))?.push(r.person_uuid);
    for (const d of fixed) await replaceStaticMembers(db, d.teamId, d.id, byCohort.get(d.id)!);
  };

  /**
   * Copy definitions; those new to this server that are dynamic are calculated, static ones get
   * their members (every static one's with `allMembers`).
   */
  const copy = async (definitions: CohortDefinition[], allMembers = false) => {
    const added = new Set(await copies.write(definitions));
    for (const d of definitions) if (added.has(d.id) && calculable(d)) void calculator.scheduleCalculation(d.id, new Date());
    await copyStaticMembers(allMembers ? definitions : definitions.filter((d) => added.has(d.id)));
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
    return rows.length ? toCohortDefinition(rows[0]) : null;
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
    if (d.isStatic) return copyStaticMembers([d]);
    if (!calculable(d)) return;
    await copies.markCalculating(d.id);
    void calculator.scheduleCalculation(d.id, new Date());
  };

  async function resync() {
    const definitions = (await pg.query(`SELECT ${COLUMNS} FROM cohorts`)).map(toCohortDefinition);
    const kept = new Set(definitions.map((d) => d.id));
    await copies.remove((await copies.list()).filter((c) => !kept.has(c.id)).map((c) => c.id));
    // Every static cohort's members: a change to them may have been missed.
    await copy(definitions, true);
  }

  changes.subscribe('cohorts', (change) => void changedElsewhere(change.id).catch(onError));
  changes.onMissed(() => void resync().catch(onError));

  return {
    ...members,
    ...calculator,
    getCohort,
    resync,

    async addStaticPersons(teamId, id, kind, ids, now) {
      const uuids = await findPersons(db, events, teamId, kind, ids);
      const d = await definition(teamId, id);
      // As the DuckDB store: the persons found are counted, a cohort not the project's gets none.
      if (!d) return uuids.length;
      if (uuids.length) {
        await pg.transaction(async (tx) => {
          await tx.run(
            `INSERT INTO cohort_static_people (cohort_id, team_id, person_uuid)
             SELECT $1, $2, u FROM unnest($3::uuid[]) u ON CONFLICT DO NOTHING`,
            [id, teamId, uuids],
          );
          await changes.publish(tx, { kind: 'cohorts', teamId, id });
        });
      }
      await withState([d]);
      await writeStaticMembers(db, teamId, id, uuids, now);
      return uuids.length;
    },

    async removeStaticPerson(teamId, id, personUuid, now) {
      if (!isUuid(personUuid)) return false;
      const removed = await pg.transaction(async (tx) => {
        const gone = await tx.query('DELETE FROM cohort_static_people WHERE cohort_id = $1 AND team_id = $2 AND person_uuid = $3::uuid RETURNING cohort_id', [
          id,
          teamId,
          personUuid,
        ]);
        if (gone.length) await changes.publish(tx, { kind: 'cohorts', teamId, id });
        return gone.length > 0;
      });
      // PostgreSQL's answer: this server's copy may not have had the member yet.
      await members.removeStaticPerson(teamId, id, personUuid, now);
      return removed;
    },

    async removePerson(teamId, personUuid) {
      if (isUuid(personUuid)) {
        await pg.transaction(async (tx) => {
          const gone = await tx.query<{ cohort_id: number }>(
            'DELETE FROM cohort_static_people WHERE team_id = $1 AND person_uuid = $2::uuid RETURNING cohort_id',
            [teamId, personUuid],
          );
          for (const id of new Set(gone.map((r) => Number(r.cohort_id)))) await changes.publish(tx, { kind: 'cohorts', teamId, id });
        });
      }
      await members.removePerson(teamId, personUuid);
    },

    async listCohorts(teamId, page) {
      const [{ n }] = await pg.query<{ n: string }>('SELECT count(*) AS n FROM cohorts WHERE team_id = $1 AND NOT deleted', [teamId]);
      const rows = await pg.query(`SELECT ${COLUMNS} FROM cohorts WHERE team_id = $1 AND NOT deleted ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`, [
        teamId,
        page.limit,
        page.offset,
      ]);
      return { count: Number(n), results: await withState(rows.map(toCohortDefinition)) };
    },

    async createCohort(teamId, input, createdBy, now) {
      const set = cohortAssignments(input);
      const columns = ['team_id', 'created_by', 'created_at', ...set.map((a) => a.column)];
      const marks = ['?', '?', '?', ...set.map((a) => placeholder(a.column))];
      const insert = numbered(`INSERT INTO cohorts (${columns.join(', ')}) VALUES (${marks.join(', ')}) RETURNING ${COLUMNS}`);
      const d = await pg.transaction(async (tx) => {
        const [row] = await tx.query(insert, [teamId, createdBy, now, ...set.map((a) => a.value)]);
        const created = toCohortDefinition(row);
        await changes.publish(tx, { kind: 'cohorts', teamId, id: created.id });
        return created;
      });
      // As the DuckDB store: a dynamic cohort starts calculating; the caller schedules it.
      await copies.write([d]);
      if (!d.isStatic) await copies.markCalculating(d.id);
      return (await withState([d]))[0];
    },

    async updateCohort(teamId, id, patch) {
      const set = cohortAssignments(patch);
      const where = 'WHERE id = ? AND team_id = ?';
      const d = await pg.transaction(async (tx) => {
        const rows = set.length
          ? await tx.query(numbered(`UPDATE cohorts SET ${set.map((a) => `${a.column} = ${placeholder(a.column)}`).join(', ')} ${where} RETURNING ${COLUMNS}`), [
              ...set.map((a) => a.value),
              id,
              teamId,
            ])
          : await tx.query(numbered(`SELECT ${COLUMNS} FROM cohorts ${where}`), [id, teamId]);
        if (rows.length) await changes.publish(tx, { kind: 'cohorts', teamId, id });
        return rows.length ? toCohortDefinition(rows[0]) : null;
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
