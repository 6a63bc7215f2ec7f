/**
 * Child process of the migration test: brings a database file to the schema of `upTo` (every
 * migration without it), prints MIGRATED, and waits to be killed: nothing is checkpointed, so
 * the next open replays the migrations from DuckDB's write-ahead log.
 */
import { openDatabase } from '../../../src/storage/db';
import { MIGRATIONS, migrate } from '../../../src/storage/migrations';

const [path, upTo] = process.argv.slice(2);
const db = await openDatabase(path as string, { readers: 1 });
await migrate(db, upTo ? MIGRATIONS.filter((m) => m.version <= Number(upTo)) : MIGRATIONS);
if (upTo) await db.run(`INSERT INTO property_definitions (team_id, name, kind, is_numerical, created_at) VALUES (1, 'n', 'event', true, now()), (1, 's', 'event', false, now())`);
process.stdout.write('MIGRATED\n');
await new Promise(() => undefined);
