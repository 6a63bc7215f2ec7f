import { NewerDatabaseError, type Migration } from '../migrations';
import type { Pg } from './client';
import { postgresMigrations } from './schema';

/** Any constant shared by every hogbase process: held while one of them migrates. */
const MIGRATION_LOCK = 0x686f6762; // 'hogb'

/**
 * Apply the migrations this database has not had, in one transaction under an advisory lock:
 * server processes starting together against one database migrate once, one after the other,
 * and a failed migration leaves nothing half-done (PostgreSQL's DDL is transactional). A
 * database with migrations this version does not know was written by a newer version: refused.
 */
export async function migratePostgres(pg: Pg, migrations: Migration[] = postgresMigrations): Promise<number[]> {
  return pg.transaction(async (tx) => {
    await tx.run('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.run(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const recorded = await tx.query<{ version: number; name: string }>('SELECT version, name FROM schema_migrations ORDER BY version');
    const known = new Set(migrations.map((m) => m.version));
    const unknown = recorded.filter((r) => !known.has(Number(r.version))).map((r) => ({ version: Number(r.version), name: String(r.name) }));
    if (unknown.length) throw new NewerDatabaseError(unknown);
    const done = new Set(recorded.map((r) => Number(r.version)));
    const applied: number[] = [];
    for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.has(m.version)) continue;
      for (const statement of m.statements) await tx.run(statement);
      await tx.run('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      applied.push(m.version);
    }
    return applied;
  });
}
