import type { Migration } from '../migrations';

/**
 * Feature flags and experience-continuity hash keys (versions 360–379). A flag's key is unique
 * among the project's live (not soft-deleted) flags; DuckDB has no partial unique index, so the
 * store checks it inside the write transaction (writes are serialized).
 */
export const flagMigrations: Migration[] = [
  {
    version: 360,
    name: 'feature flags',
    statements: [
      `CREATE SEQUENCE feature_flag_id_seq START 1`,
      `CREATE TABLE feature_flags (
        id INTEGER PRIMARY KEY DEFAULT nextval('feature_flag_id_seq'),
        team_id INTEGER NOT NULL,
        key VARCHAR NOT NULL,
        name VARCHAR NOT NULL DEFAULT '',
        filters JSON NOT NULL,
        active BOOLEAN NOT NULL DEFAULT true,
        deleted BOOLEAN NOT NULL DEFAULT false,
        ensure_experience_continuity BOOLEAN NOT NULL DEFAULT false,
        created_by INTEGER,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL,
        version INTEGER NOT NULL DEFAULT 1
      )`,
      `CREATE TABLE feature_flag_hash_key_overrides (
        team_id INTEGER NOT NULL,
        person_uuid UUID NOT NULL,
        feature_flag_key VARCHAR NOT NULL,
        hash_key VARCHAR NOT NULL,
        PRIMARY KEY (team_id, person_uuid, feature_flag_key)
      )`,
    ],
  },
];
