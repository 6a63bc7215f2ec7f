import type { Database } from './db';
import { managementMigrations } from './management/schema';
import { eventMigrations } from './events/tiers/schema';
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

/**
 * The database has migrations this version does not know: a newer version wrote it. Reading it
 * could misread what those migrations changed, so the server refuses to start (a downgrade is
 * not supported; run the newer version, or restore a backup taken with this one).
 */
export class NewerDatabaseError extends Error {
  constructor(readonly unknown: Array<{ version: number; name: string }>) {
    super(
      `The database was written by a newer version of this server (schema migrations it does not know: ${unknown.map((m) => `${m.version} ${m.name}`).join(', ')}). Run that version or a newer one; downgrades are not supported.`,
    );
    this.name = 'NewerDatabaseError';
  }
}

export async function migrate(db: Database, migrations: Migration[] = MIGRATIONS): Promise<number[]> {
  await db.run(
    `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL DEFAULT now())`,
  );
  const recorded = await db.query<{ version: number; name: string }>('SELECT version, name FROM schema_migrations ORDER BY version');
  // Against every migration this version has, whatever subset is applied here (the event store
  // applies its own when opened alone).
  const known = new Set(MIGRATIONS.map((m) => m.version));
  const unknown = recorded.filter((r) => !known.has(Number(r.version))).map((r) => ({ version: Number(r.version), name: String(r.name) }));
  if (unknown.length) throw new NewerDatabaseError(unknown);
  const done = new Set(recorded.map((r) => Number(r.version)));
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
