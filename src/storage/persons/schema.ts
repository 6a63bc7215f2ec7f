import type { Migration } from '../migrations';

/**
 * Persons and their distinct ids (versions 250–299). A person has a uuid (what events and the API
 * show) and a small integer id (PostHog's Postgres id, used by cohort and person listings).
 * `person_distinct_ids` maps every distinct id of a project to exactly one person; a merge moves
 * the distinct ids of the losing person onto the winner and deletes the loser.
 */
export const personMigrations: Migration[] = [
  {
    version: 250,
    name: 'persons',
    statements: [
      `CREATE SEQUENCE person_id_seq START 1`,
      `CREATE TABLE persons (
        id BIGINT PRIMARY KEY DEFAULT nextval('person_id_seq'),
        uuid UUID NOT NULL UNIQUE,
        team_id INTEGER NOT NULL,
        properties JSON NOT NULL DEFAULT '{}',
        is_identified BOOLEAN NOT NULL DEFAULT false,
        created_at TIMESTAMP NOT NULL,
        version INTEGER NOT NULL DEFAULT 0
      )`,
      `CREATE TABLE person_distinct_ids (
        team_id INTEGER NOT NULL,
        distinct_id VARCHAR NOT NULL,
        person_uuid UUID NOT NULL,
        PRIMARY KEY (team_id, distinct_id)
      )`,
      `CREATE TABLE groups (
        team_id INTEGER NOT NULL,
        group_type VARCHAR NOT NULL,
        group_type_index INTEGER NOT NULL,
        group_key VARCHAR NOT NULL,
        properties JSON NOT NULL DEFAULT '{}',
        created_at TIMESTAMP NOT NULL,
        PRIMARY KEY (team_id, group_type, group_key)
      )`,
    ],
  },
  {
    version: 251,
    name: 'person erasures in progress',
    // A person deletion (and, when asked, their events) runs as several steps over several
    // tables and files; its row is written first and removed last, so a crash in between is
    // finished at the next start (storage/erasure.ts). The distinct ids are kept because the
    // person's own rows are gone by then.
    statements: [
      `CREATE TABLE person_erasures (
        team_id INTEGER NOT NULL,
        person_uuid UUID NOT NULL,
        distinct_ids VARCHAR[] NOT NULL,
        delete_events BOOLEAN NOT NULL,
        requested_at TIMESTAMP NOT NULL,
        PRIMARY KEY (team_id, person_uuid)
      )`,
    ],
  },
];
