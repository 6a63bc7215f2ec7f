import type { Migration } from '../migrations';

/**
 * The management tables in PostgreSQL, as versioned migrations (recorded in this database's own
 * `schema_migrations`). Versions follow the DuckDB ranges of the same tables: management
 * 100–199, persons 250–299, definitions 300–319, invites 320–329, cohorts 330–349, flags
 * 360–379. Append new migrations; never edit one that has shipped.
 *
 * Names listed in order sort by their bytes (COLLATE "C"), as DuckDB sorts them, whatever the
 * database's locale. Where DuckDB has no partial unique index, the live-flag key is one here, so two server
 * processes creating the same key at once cannot both succeed. Cohorts hold their definitions
 * and the members uploaded to static cohorts; a dynamic cohort's members and every cohort's
 * calculation state are derived from events, and live beside them (DuckDB).
 */
export const postgresMigrations: Migration[] = [
  {
    version: 100,
    name: 'management entities',
    statements: [
      `CREATE TABLE organizations (
        id uuid PRIMARY KEY,
        name text NOT NULL,
        slug text NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`,
      `CREATE TABLE users (
        id serial PRIMARY KEY,
        uuid uuid NOT NULL UNIQUE,
        distinct_id text NOT NULL,
        first_name text NOT NULL DEFAULT '',
        last_name text NOT NULL DEFAULT '',
        email text NOT NULL UNIQUE,
        current_organization_id uuid,
        current_project_id integer,
        created_at timestamptz NOT NULL
      )`,
      `CREATE TABLE memberships (
        organization_id uuid NOT NULL,
        user_id integer NOT NULL,
        level integer NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (organization_id, user_id)
      )`,
      `CREATE INDEX memberships_user ON memberships (user_id)`,
      `CREATE TABLE personal_api_keys (
        id text PRIMARY KEY,
        user_id integer NOT NULL,
        label text NOT NULL,
        secure_value text NOT NULL UNIQUE,
        mask_value text NOT NULL,
        created_at timestamptz NOT NULL,
        last_used_at timestamptz,
        revoked_at timestamptz
      )`,
      `CREATE INDEX personal_api_keys_user ON personal_api_keys (user_id)`,
      `CREATE TABLE projects (
        id serial PRIMARY KEY,
        uuid uuid NOT NULL UNIQUE,
        organization_id uuid NOT NULL,
        api_token text NOT NULL UNIQUE,
        name text NOT NULL,
        settings json NOT NULL,
        ingested_event boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`,
      `CREATE INDEX projects_organization ON projects (organization_id)`,
    ],
  },
  {
    version: 250,
    name: 'persons',
    statements: [
      // Ids are handed out in blocks (person-home.ts), so a person gets its id in memory
      // at once, and two server processes never hand out the same one.
      `CREATE SEQUENCE person_id_seq`,
      `CREATE TABLE persons (
        id bigint PRIMARY KEY,
        uuid uuid NOT NULL UNIQUE,
        team_id integer NOT NULL,
        properties json NOT NULL,
        is_identified boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL
      )`,
      `CREATE INDEX persons_team ON persons (team_id)`,
      `CREATE TABLE person_distinct_ids (
        team_id integer NOT NULL,
        distinct_id text NOT NULL,
        person_uuid uuid NOT NULL,
        PRIMARY KEY (team_id, distinct_id)
      )`,
      `CREATE TABLE groups (
        team_id integer NOT NULL,
        group_type text NOT NULL,
        group_type_index integer NOT NULL,
        group_key text NOT NULL,
        properties json NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (team_id, group_type, group_key)
      )`,
    ],
  },
  {
    version: 300,
    name: 'event and property definitions, and the event names that carried each property',
    statements: [
      `CREATE TABLE event_definitions (
        id uuid PRIMARY KEY,
        team_id integer NOT NULL,
        name text COLLATE "C" NOT NULL,
        created_at timestamptz NOT NULL,
        last_seen_at timestamptz,
        owner integer,
        description text,
        tags json NOT NULL DEFAULT '[]',
        verified boolean NOT NULL DEFAULT false,
        verified_at timestamptz,
        verified_by integer,
        updated_at timestamptz,
        updated_by integer,
        last_updated_at timestamptz,
        post_to_chat boolean NOT NULL DEFAULT false,
        UNIQUE (team_id, name)
      )`,
      `CREATE TABLE property_definitions (
        id uuid NOT NULL UNIQUE,
        team_id integer NOT NULL,
        name text COLLATE "C" NOT NULL,
        kind text NOT NULL,
        is_numerical boolean NOT NULL DEFAULT false,
        property_type text,
        description text,
        tags json NOT NULL DEFAULT '[]',
        created_at timestamptz NOT NULL,
        updated_at timestamptz,
        updated_by integer,
        PRIMARY KEY (team_id, kind, name)
      )`,
      `CREATE TABLE event_properties (
        team_id integer NOT NULL,
        event text COLLATE "C" NOT NULL,
        property text COLLATE "C" NOT NULL,
        PRIMARY KEY (team_id, event, property)
      )`,
    ],
  },
  {
    version: 310,
    name: 'event query usage',
    statements: [
      `CREATE TABLE event_query_usage (
        team_id integer NOT NULL,
        event text COLLATE "C" NOT NULL,
        day date NOT NULL,
        count integer NOT NULL,
        PRIMARY KEY (team_id, event, day)
      )`,
    ],
  },
  {
    version: 320,
    name: 'organization invites',
    statements: [
      `CREATE TABLE organization_invites (
        id uuid PRIMARY KEY,
        organization_id uuid NOT NULL,
        target_email text NOT NULL,
        first_name text NOT NULL DEFAULT '',
        message text,
        level integer NOT NULL DEFAULT 1,
        emailing_attempt_made boolean NOT NULL DEFAULT false,
        created_by integer,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`,
      `CREATE INDEX organization_invites_organization ON organization_invites (organization_id)`,
    ],
  },
  {
    version: 330,
    name: 'cohort definitions',
    statements: [
      `CREATE TABLE cohorts (
        id serial PRIMARY KEY,
        team_id integer NOT NULL,
        name text,
        description text NOT NULL DEFAULT '',
        groups json NOT NULL DEFAULT '[]',
        filters json,
        deleted boolean NOT NULL DEFAULT false,
        is_static boolean NOT NULL DEFAULT false,
        created_by integer,
        created_at timestamptz NOT NULL
      )`,
      `CREATE INDEX cohorts_team ON cohorts (team_id)`,
    ],
  },
  {
    version: 331,
    name: 'static cohort members',
    statements: [
      // Only static cohorts' members: a dynamic cohort's are calculated by each server from the
      // events beside it. Kept by person uuid, as uploaded; a listing joins the persons there are.
      `CREATE TABLE cohort_static_people (
        cohort_id integer NOT NULL REFERENCES cohorts (id) ON DELETE CASCADE,
        team_id integer NOT NULL,
        person_uuid uuid NOT NULL,
        PRIMARY KEY (cohort_id, person_uuid)
      )`,
      `CREATE INDEX cohort_static_people_person ON cohort_static_people (team_id, person_uuid)`,
    ],
  },
  {
    version: 360,
    name: 'feature flags',
    statements: [
      `CREATE TABLE feature_flags (
        id serial PRIMARY KEY,
        team_id integer NOT NULL,
        key text NOT NULL,
        name text NOT NULL DEFAULT '',
        filters json NOT NULL,
        active boolean NOT NULL DEFAULT true,
        deleted boolean NOT NULL DEFAULT false,
        ensure_experience_continuity boolean NOT NULL DEFAULT false,
        created_by integer,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        version integer NOT NULL DEFAULT 1
      )`,
      `CREATE INDEX feature_flags_team ON feature_flags (team_id)`,
      `CREATE UNIQUE INDEX feature_flags_live_key ON feature_flags (team_id, key) WHERE NOT deleted`,
      `CREATE TABLE feature_flag_hash_key_overrides (
        team_id integer NOT NULL,
        person_uuid uuid NOT NULL,
        feature_flag_key text NOT NULL,
        hash_key text NOT NULL,
        PRIMARY KEY (team_id, person_uuid, feature_flag_key)
      )`,
    ],
  },
  {
    version: 260,
    name: 'a distinct id goes with its person',
    statements: [
      // Server processes write links and delete persons concurrently: a check made by each write
      // (does the person still exist?) reads its own snapshot, and two of them committing at once
      // could leave a link to a person deleted meanwhile. The foreign key makes PostgreSQL hold
      // that rule itself: a person's delete takes its links with it, and a link waits for a
      // delete under way (person-home.ts locks the person it links to first).
      `DELETE FROM person_distinct_ids d WHERE NOT EXISTS (SELECT 1 FROM persons p WHERE p.uuid = d.person_uuid)`,
      `CREATE INDEX person_distinct_ids_person ON person_distinct_ids (person_uuid)`,
      `ALTER TABLE person_distinct_ids ADD CONSTRAINT person_distinct_ids_person_fk FOREIGN KEY (person_uuid) REFERENCES persons (uuid) ON DELETE CASCADE`,
    ],
  },
  {
    version: 261,
    name: 'group types numbered by the home',
    statements: [
      // PostHog's GroupTypeMapping: one index a type and one type an index, per project. Processes
      // give a new type its index apart (person-home.ts settles it here).
      `CREATE TABLE group_type_mapping (
        team_id integer NOT NULL,
        group_type text NOT NULL,
        group_type_index integer NOT NULL,
        PRIMARY KEY (team_id, group_type),
        UNIQUE (team_id, group_type_index)
      )`,
      // From the groups there are: each type keeps its index, unless another type holds it too
      // (two processes numbered two types alike): the first by name keeps it, and the others
      // take indexes after the highest, their groups with them.
      `INSERT INTO group_type_mapping (team_id, group_type, group_type_index)
       SELECT DISTINCT ON (team_id, wanted) team_id, group_type, wanted
       FROM (SELECT team_id, group_type, min(group_type_index) AS wanted FROM groups GROUP BY team_id, group_type) t
       ORDER BY team_id, wanted, group_type`,
      `INSERT INTO group_type_mapping (team_id, group_type, group_type_index)
       SELECT t.team_id, t.group_type, (SELECT max(m.group_type_index) FROM group_type_mapping m WHERE m.team_id = t.team_id) + row_number() OVER (PARTITION BY t.team_id ORDER BY t.wanted, t.group_type)
       FROM (SELECT team_id, group_type, min(group_type_index) AS wanted FROM groups GROUP BY team_id, group_type) t
       WHERE NOT EXISTS (SELECT 1 FROM group_type_mapping m WHERE m.team_id = t.team_id AND m.group_type = t.group_type)`,
      `UPDATE groups g SET group_type_index = m.group_type_index FROM group_type_mapping m
       WHERE m.team_id = g.team_id AND m.group_type = g.group_type AND g.group_type_index <> m.group_type_index`,
    ],
  },
];
