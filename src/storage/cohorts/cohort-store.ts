import type { Database } from '../db';
import type { EventsSourceRef } from '../definitions/events-source';
import { createCohortCalculator } from './cohort-calculator';
import { createCohortMembers } from './cohort-members';
import { createCohortRows } from './cohort-rows';
import type { CohortStore } from './types';

/** Cohorts, their members and their background calculation, behind one interface. */
export function createCohortStore(db: Database, events: EventsSourceRef): CohortStore {
  return {
    ...createCohortRows(db),
    ...createCohortMembers(db, events),
    ...createCohortCalculator(db, events),
    async deleteTeam(teamId) {
      await db.transaction(async (tx) => {
        await tx.run('DELETE FROM cohort_people WHERE cohort_id IN (SELECT id FROM cohorts WHERE team_id = ?)', [teamId]);
        await tx.run('DELETE FROM cohorts WHERE team_id = ?', [teamId]);
      });
    },
  };
}
