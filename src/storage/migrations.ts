import type { Database } from './db';
import { managementMigrations } from './management/schema';
import { eventMigrations } from './events/schema';
import { definitionMigrations } from './definitions/schema';
import { personMigrations } from './persons/schema';
import { flagMigrations } from './flags/schema';
import { inviteMigrations } from './invites/schema';
import { cohortMigrations } from './cohorts/schema';

/**
 * Versioned schema migrations. Each has a unique, increasing version; applied versions are
 * recorded in `schema_migrations` and never run twice. Append new migrations; never edit one
 * that has shipped. Each feature area owns a range of versions: management 100–199,
 * events and persons 200–299, flags/cohorts/definitions 300–399.
 */
export interface Migration {
  version: number;
  name: string;
  statements: string[];
}

export const MIGRATIONS: Migration[] = [...managementMigrations, ...eventMigrations, ...personMigrations, ...definitionMigrations, ...flagMigrations, ...inviteMigrations, ...cohortMigrations].sort((a, b) => a.version - b.version);

export async function migrate(db: Database, migrations: Migration[] = MIGRATIONS): Promise<number[]> {
  await db.run(
    `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL DEFAULT now())`,
  );
  const done = new Set((await db.query<{ version: number }>('SELECT version FROM schema_migrations')).map((r) => r.version));
  const applied: number[] = [];
  for (const m of migrations) {
    if (done.has(m.version)) continue;
    await db.transaction(async (tx) => {
      for (const statement of m.statements) await tx.run(statement);
      await tx.run('INSERT INTO schema_migrations (version, name) VALUES (?, ?)', [m.version, m.name]);
    });
    applied.push(m.version);
  }
  return applied;
}
