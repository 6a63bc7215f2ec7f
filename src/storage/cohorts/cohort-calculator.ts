import { compileCohortQuery, type CohortRelations, type CompileContext } from './compile-cohort';
import { cohortDefinition } from '../../core/cohorts/definition';
import { leavesOf, needsEvents, type BehavioralLeaf, type CohortGroup, type SqlFragment } from '../../core/cohorts/types';
import type { Database, SqlParam } from '../db';
import type { EventsSourceRef } from '../definitions/events-source';
import { toCohort } from './cohort-columns';
import type { CohortStore } from './types';

/** The DuckDB tables a cohort's calculation reads (the persons' copy beside the events). */
const COHORT_RELATIONS: CohortRelations = { persons: 'persons', distinctIds: 'person_distinct_ids', members: 'cohort_people', cohorts: 'cohorts' };

/**
 * Background membership calculation. One run per cohort at a time: a request while a run is in
 * flight only marks it to run once more with the latest clock, so a burst of updates costs at
 * most two runs. A failure is recorded on the cohort and never reaches the caller.
 */

interface Flight {
  now: Date;
  again: boolean;
  done: Promise<void>;
}

type Calculator = Pick<CohortStore, 'scheduleCalculation' | 'whenIdle'>;

export function createCohortCalculator(db: Database, events: EventsSourceRef): Calculator {
  const flights = new Map<number, Flight>();

  const eventsRelation = async (teamId: number): Promise<SqlFragment> => {
    if (!events.current) throw new Error('no events source is configured');
    const relation = await events.current(teamId);
    return { sql: relation.sql, params: relation.params as SqlFragment['params'] };
  };

  /**
   * What behavioural conditions read: DuckDB's own events, or each condition's counts per
   * distinct id from the engine the events are in, bound into the statement as two JSON lists
   * (the persons, their distinct ids and the other cohorts are here, so the rest runs here).
   */
  const eventsContext = async (teamId: number, definition: CohortGroup, now: Date): Promise<Pick<CompileContext, 'events' | 'behavioralRows'>> => {
    if (events.current || !events.behavioralCounts) return { events: await eventsRelation(teamId) };
    const rows = new Map<BehavioralLeaf, SqlFragment>();
    for (const leaf of leavesOf(definition)) {
      if (leaf.type !== 'behavioral' || rows.has(leaf)) continue;
      const counts = await events.behavioralCounts(teamId, leaf, now);
      rows.set(leaf, {
        sql: `(SELECT unnest(from_json(?, '["VARCHAR"]')) AS distinct_id, unnest(from_json(?, '["BIGINT"]')) AS n)`,
        params: [JSON.stringify(counts.map((c) => c.distinctId)), JSON.stringify(counts.map((c) => c.n))],
      });
    }
    return { behavioralRows: (leaf) => rows.get(leaf)! };
  };

  /** Write the new membership under a new version, then switch to it and drop the old rows. */
  async function calculate(id: number, now: Date): Promise<void> {
    const rows = await db.query('SELECT * FROM cohorts WHERE id = ?', [id]);
    if (!rows.length) return;
    const cohort = toCohort(rows[0]);
    if (cohort.deleted || cohort.isStatic) return;
    await events.syncPersons?.(cohort.teamId);
    const definition = cohortDefinition(cohort.filters, cohort.groups);
    const context = needsEvents(definition) ? await eventsContext(cohort.teamId, definition, now) : {};
    const query = compileCohortQuery(definition, { teamId: cohort.teamId, now, relations: COHORT_RELATIONS, ...context });
    const version = Math.max(cohort.version, cohort.pendingVersion ?? 0) + 1;
    await db.run('UPDATE cohorts SET pending_version = ? WHERE id = ?', [version, id]);
    try {
      await db.run(`INSERT INTO cohort_people (cohort_id, person_uuid, version) SELECT ?, person_uuid, ? FROM (${query.sql}) AS matched`, [
        id,
        version,
        ...(query.params as SqlParam[]),
      ]);
      await db.transaction(async (tx) => {
        await tx.run(
          `UPDATE cohorts SET version = ?, count = (SELECT count(*) FROM cohort_people WHERE cohort_id = ? AND version = ?),
           last_calculation = ?, errors_calculating = 0, last_error_at = NULL WHERE id = ?`,
          [version, id, version, now, id],
        );
        await tx.run('DELETE FROM cohort_people WHERE cohort_id = ? AND version < ?', [id, version]);
      });
    } catch (error) {
      await db.run('DELETE FROM cohort_people WHERE cohort_id = ? AND version = ?', [id, version]);
      throw error;
    }
  }

  const mark = (id: number, calculating: boolean) =>
    db.run('UPDATE cohorts SET is_calculating = ? WHERE id = ?', [calculating, id]).catch(() => undefined);

  async function run(id: number, flight: Flight) {
    for (;;) {
      flight.again = false;
      // The previous flight may have lowered the flag after this one was requested.
      await mark(id, true);
      try {
        await calculate(id, flight.now);
      } catch {
        await db.run('UPDATE cohorts SET errors_calculating = errors_calculating + 1, last_error_at = ? WHERE id = ?', [flight.now, id]).catch(() => undefined);
      }
      if (flight.again) continue;
      await mark(id, false);
      // Checked and released in one step: a request after this starts a new flight.
      if (!flight.again) return void flights.delete(id);
    }
  }

  return {
    scheduleCalculation(id, now) {
      const inFlight = flights.get(id);
      if (inFlight) {
        inFlight.again = true;
        inFlight.now = now;
        return inFlight.done;
      }
      const flight = { now, again: false } as Flight;
      flight.done = new Promise<void>((resolve) => queueMicrotask(resolve)).then(() => run(id, flight));
      flights.set(id, flight);
      return flight.done;
    },

    async whenIdle() {
      while (flights.size) await Promise.all([...flights.values()].map((f) => f.done));
    },
  };
}
