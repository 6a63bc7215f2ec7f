import type { Migration } from '../migrations';

/** Organizations, users, memberships, personal API keys, projects (versions 100–199). */
export const managementMigrations: Migration[] = [
  {
    version: 100,
    name: 'management entities',
    statements: [
      `CREATE TABLE organizations (
        id UUID PRIMARY KEY,
        name VARCHAR NOT NULL,
        slug VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL
      )`,
      `CREATE SEQUENCE user_id_seq START 1`,
      `CREATE TABLE users (
        id INTEGER PRIMARY KEY DEFAULT nextval('user_id_seq'),
        uuid UUID NOT NULL UNIQUE,
        distinct_id VARCHAR NOT NULL,
        first_name VARCHAR NOT NULL DEFAULT '',
        last_name VARCHAR NOT NULL DEFAULT '',
        email VARCHAR NOT NULL UNIQUE,
        current_organization_id UUID,
        current_project_id INTEGER,
        created_at TIMESTAMP NOT NULL
      )`,
      `CREATE TABLE memberships (
        organization_id UUID NOT NULL,
        user_id INTEGER NOT NULL,
        level INTEGER NOT NULL,
        created_at TIMESTAMP NOT NULL,
        PRIMARY KEY (organization_id, user_id)
      )`,
      `CREATE TABLE personal_api_keys (
        id VARCHAR PRIMARY KEY,
        user_id INTEGER NOT NULL,
        label VARCHAR NOT NULL,
        secure_value VARCHAR NOT NULL UNIQUE,
        mask_value VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        last_used_at TIMESTAMP,
        revoked_at TIMESTAMP
      )`,
      `CREATE SEQUENCE project_id_seq START 1`,
      `CREATE TABLE projects (
        id INTEGER PRIMARY KEY DEFAULT nextval('project_id_seq'),
        uuid UUID NOT NULL UNIQUE,
        organization_id UUID NOT NULL,
        api_token VARCHAR NOT NULL UNIQUE,
        name VARCHAR NOT NULL,
        settings JSON NOT NULL,
        ingested_event BOOLEAN NOT NULL DEFAULT false,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL
      )`,
    ],
  },
];
