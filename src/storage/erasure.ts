import type { CohortStore } from './cohorts/types';
import type { Database } from './db';
import type { ErasedEvents, EventStore, PersonMatch } from './events';
import type { FlagStore } from './flags/types';
import type { Logger } from '../logger';
import type { PersonStore } from './persons/types';

/** What deleting a person removed. */
export interface PersonErasure {
  /** The person's distinct ids, as they were. */
  distinctIds: string[];
  /** What their events' removal did; null when their events were kept. */
  events: ErasedEvents | null;
}

/** Where the events are kept outside the event store's tiers (ClickHouse): the rows of the person deleted there, all visible to no read once it resolves; returns how many. */
export interface PersonEventsEraser {
  erasePersonEvents(teamId: number, match: PersonMatch): Promise<number>;
}

interface Job {
  teamId: number;
  personUuid: string;
  distinctIds: string[];
  deleteEvents: boolean;
}

/**
 * Deleting a person (PostHog's `DELETE /persons/:id/`, with `delete_events` the GDPR right to
 * erasure): the person and their distinct ids, their cohort memberships and flag hash keys, and
 * when asked every event with one of their distinct ids or their person id, from every tier.
 *
 * Events still in the log are handled by draining it first, not by filtering loads: the call
 * waits until every capture request of the project acknowledged before it is processed (so no
 * later processing brings the person back from those events) and, with `deleteEvents`, loaded
 * (so their rows are in the tables and files the erasure rewrites). Nothing acknowledged before
 * the call can then reach storage after it, and the write path stays as it is; the cost is the
 * wait, normally the ~1 s a segment takes to be loaded, bounded by `EventStore.awaitLoaded`
 * (503 when the log is that far behind, before anything is deleted). The events' removal covers
 * what was loaded when it began (all that was logged before the call, and what the wait loaded
 * with it); events loaded later are kept, and once the person is deleted new events of their
 * distinct ids make a new person, as in PostHog.
 *
 * With the events loaded into a table elsewhere (EVENTS_STORE: `eventsElsewhere`), they are
 * deleted there after the store's own tiers, in the same order and for the same reason: the wait
 * above has put every row of the person logged before the call into that table, and moved the
 * store's watermark past them before it returned (the sink inserts, then the watermark moves), so
 * no replay after a crash inserts them again once they are deleted; their log files and processed
 * copies are removed by the loads themselves.
 *
 * The steps span tables and files, so the job is recorded (`person_erasures`) before the first
 * and removed after the last; every step is idempotent, and a job found at start (a crash in
 * between) is run again to the end.
 */
export function createPersonErasure(
  db: Database,
  stores: { persons: PersonStore; cohorts: CohortStore; flags: FlagStore; events: EventStore; eventsElsewhere?: PersonEventsEraser },
  now: () => Date,
  logger?: Logger,
) {
  const { persons, cohorts, flags, events, eventsElsewhere } = stores;

  async function run(job: Job): Promise<ErasedEvents | null> {
    await persons.deletePerson(job.teamId, job.personUuid, job.distinctIds);
    await cohorts.removePerson(job.teamId, job.personUuid);
    await flags.deletePersonHashKeys(job.teamId, job.personUuid);
    const match: PersonMatch = { distinctIds: job.distinctIds, personIds: [job.personUuid] };
    const erased = job.deleteEvents ? await events.erasePersonEvents(job.teamId, match) : null;
    if (job.deleteEvents && eventsElsewhere) {
      const started = performance.now();
      const rows = await eventsElsewhere.erasePersonEvents(job.teamId, match);
      logger?.info('person events erased from the events database', { project: job.teamId, rows, ms: Math.round(performance.now() - started) });
    }
    await db.run('DELETE FROM person_erasures WHERE team_id = ? AND person_uuid = TRY_CAST(? AS UUID)', [job.teamId, job.personUuid]);
    return erased;
  }

  return {
    /** Null when the project has no such person (any more). */
    async erase(teamId: number, personUuid: string, deleteEvents: boolean): Promise<PersonErasure | null> {
      if (deleteEvents) await events.awaitLoaded(teamId);
      else await events.awaitIntake(teamId, null);
      await persons.ensureLoaded(teamId);
      const person = persons.findByUuid(teamId, personUuid);
      if (!person) return null;
      const job: Job = { teamId, personUuid, distinctIds: [...person.distinctIds], deleteEvents };
      await db.run(
        `INSERT OR REPLACE INTO person_erasures VALUES (?, TRY_CAST(? AS UUID), from_json(CAST(? AS JSON), '["VARCHAR"]'), ?, ?)`,
        [teamId, personUuid, JSON.stringify(job.distinctIds), deleteEvents, now()],
      );
      return { distinctIds: job.distinctIds, events: await run(job) };
    },

    /** Finish the erasures a stop or crash cut short (at start, once the log is loaded). */
    async resume(): Promise<number> {
      const rows = await db.query<{ team_id: number; person_uuid: string; distinct_ids: string[]; delete_events: boolean }>(
        'SELECT team_id, person_uuid::VARCHAR AS person_uuid, distinct_ids, delete_events FROM person_erasures ORDER BY requested_at',
      );
      for (const r of rows) {
        await run({ teamId: r.team_id, personUuid: r.person_uuid, distinctIds: [...r.distinct_ids], deleteEvents: r.delete_events });
        logger?.info('person erasure finished after a restart', { project: r.team_id, events: r.delete_events });
      }
      return rows.length;
    },
  };
}
