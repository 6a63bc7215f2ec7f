import type { Migration } from '../migrations';

/** Organization invites (versions 320–329). */
export const inviteMigrations: Migration[] = [
  {
    version: 320,
    name: 'organization invites',
    statements: [
      `CREATE TABLE organization_invites (
        id UUID PRIMARY KEY,
        organization_id UUID NOT NULL,
        target_email VARCHAR NOT NULL,
        first_name VARCHAR NOT NULL DEFAULT '',
        message VARCHAR,
        level INTEGER NOT NULL DEFAULT 1,
        emailing_attempt_made BOOLEAN NOT NULL DEFAULT false,
        created_by INTEGER,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL
      )`,
      `CREATE INDEX organization_invites_organization ON organization_invites (organization_id)`,
    ],
  },
];
