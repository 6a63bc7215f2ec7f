import type { Migration } from '../migrations';

/**
 * Cohorts and their members (versions 330–349).
 *
 * A calculation writes the new membership under a new `version` and then, in one transaction,
 * makes it the cohort's `version` and deletes the older rows; readers join on the cohort's
 * current version, so they see the old membership or the new one, never a mix. Static cohorts
 * keep their members under their current version too.
 */
export const cohortMigrations: Migration[] = [
  {
    version: 330,
    name: 'cohorts and cohort people',
    statements: [
      `CREATE SEQUENCE cohort_id_seq START 1`,
      `CREATE TABLE cohorts (
        id INTEGER PRIMARY KEY DEFAULT nextval('cohort_id_seq'),
        team_id INTEGER NOT NULL,
        name VARCHAR,
        description VARCHAR NOT NULL DEFAULT '',
        groups JSON NOT NULL DEFAULT '[]',
        filters JSON,
        deleted BOOLEAN NOT NULL DEFAULT false,
        is_static BOOLEAN NOT NULL DEFAULT false,
        is_calculating BOOLEAN NOT NULL DEFAULT false,
        created_by INTEGER,
        created_at TIMESTAMP NOT NULL,
        last_calculation TIMESTAMP,
        errors_calculating INTEGER NOT NULL DEFAULT 0,
        last_error_at TIMESTAMP,
        count INTEGER,
        version INTEGER NOT NULL DEFAULT 0,
        pending_version INTEGER
      )`,
      `CREATE INDEX cohorts_team ON cohorts (team_id)`,
      `CREATE TABLE cohort_people (
        cohort_id INTEGER NOT NULL,
        person_uuid UUID NOT NULL,
        version INTEGER NOT NULL,
        PRIMARY KEY (cohort_id, person_uuid, version)
      )`,
      // Feature flags ask "which cohorts is this person in" on every evaluation.
      `CREATE INDEX cohort_people_person ON cohort_people (person_uuid)`,
    ],
  },
];
