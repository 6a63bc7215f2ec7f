import { afterEach, expect, test } from 'bun:test';
import { migrate, MIGRATIONS } from '../../../../src/storage/migrations';
import { openBareDatabase } from '../helpers';

let opened: Awaited<ReturnType<typeof openBareDatabase>> | null = null;
afterEach(async () => {
  await opened?.cleanup();
  opened = null;
});

// Files written before their order was checked may hold runs though registered as sorted
// (partitioned writes with several threads, rewrites of a person's rows): an export must not
// read them in place of a sort.
test('files registered before migration 204 are read as runs; files registered after keep what they say', async () => {
  opened = await openBareDatabase();
  const { db } = opened;
  await migrate(db, MIGRATIONS.filter((m) => m.version < 204));
  const register = (path: string, sorted?: boolean) =>
    db.run(
      `INSERT INTO event_parquet_files (path, team_id, day, min_ts, max_ts, rows, bytes, created_at${sorted === undefined ? '' : ', sorted'}) VALUES (?, 1, DATE '2024-01-01', TIMESTAMP '2024-01-01 00:00:00', TIMESTAMP '2024-01-01 01:00:00', 10, 100, now()${sorted === undefined ? '' : ', ?'})`,
      sorted === undefined ? [path] : [path, sorted],
    );
  await register('1/2024-01-01/a.parquet');
  await register('1/2024-01-01/b.parquet', false);
  expect(await migrate(db)).toContain(204);
  await register('1/2024-01-01/c.parquet', true);
  expect(await db.query('SELECT path, sorted FROM event_parquet_files ORDER BY path')).toEqual([
    { path: '1/2024-01-01/a.parquet', sorted: false },
    { path: '1/2024-01-01/b.parquet', sorted: false },
    { path: '1/2024-01-01/c.parquet', sorted: true },
  ]);
});
