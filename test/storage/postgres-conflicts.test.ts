import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import { CONFLICT_ATTEMPTS, openPg, type Pg } from '../../src/storage/postgres/client';
import { migratePostgres } from '../../src/storage/postgres/migrate';
import { createPostgresSeenRows } from '../../src/storage/postgres/seen-rows';
import { againstHeldLock, createTestDatabase, POSTGRES_SKIP_REASON, postgresAvailable } from '../helpers/postgres';

/**
 * A transaction PostgreSQL breaks off to end a deadlock (or a serialization failure) did
 * nothing, and `transaction(fn, { retryConflicts: true })` runs it again from the start; any
 * other failure, and a transaction without the option, fails as before.
 */
const run = postgresAvailable ? describe : describe.skip;
const title = (s: string) => (postgresAvailable ? s : `${s} (skipped: ${POSTGRES_SKIP_REASON})`);

run(title('PostgreSQL transactions broken off by a conflict'), () => {
  let url: string;
  let pg: Pg;
  beforeAll(async () => {
    url = await createTestDatabase();
    pg = await openPg(url);
    await pg.run('CREATE TABLE t (id integer PRIMARY KEY, v integer NOT NULL)');
  });
  afterAll(async () => {
    await pg?.close();
  });
  beforeEach(async () => {
    await pg.run('TRUNCATE t');
    await pg.run('INSERT INTO t VALUES (1, 0), (2, 0)');
  });

  const rows = () => pg.query<{ id: number; v: number }>('SELECT id, v FROM t ORDER BY id');
  /**
   * The transaction under test takes row 2, then wants row 1, which another connection holds;
   * that one then wants row 2: the transaction under test is the deadlock's victim.
   */
  async function deadlocked(retryConflicts: boolean) {
    let attempts = 0;
    const victim = () =>
      pg.transaction(
        async (tx) => {
          attempts++;
          await tx.run('UPDATE t SET v = v + 1 WHERE id = 2');
          await tx.run('UPDATE t SET v = v + 1 WHERE id = 1');
          return 'committed';
        },
        { retryConflicts },
      );
    const outcome = await againstHeldLock(url, ['UPDATE t SET v = v + 100 WHERE id = 1'], victim, ['UPDATE t SET v = v + 100 WHERE id = 2']);
    return { ...outcome, attempts };
  }

  test('a deadlock victim runs again, after the other side, and commits', async () => {
    expect(await deadlocked(true)).toEqual({ value: 'committed', state: null, attempts: 2 });
    expect(await rows()).toEqual([
      { id: 1, v: 101 },
      { id: 2, v: 101 },
    ]);
  });

  test('without the option, the deadlock fails the transaction (40P01), which wrote nothing', async () => {
    expect(await deadlocked(false)).toEqual({ value: null, state: '40P01', attempts: 1 });
    expect(await rows()).toEqual([
      { id: 1, v: 100 },
      { id: 2, v: 100 },
    ]);
  });

  test(`a conflict met on every attempt fails after ${CONFLICT_ATTEMPTS}, each rolled back`, async () => {
    let attempts = 0;
    const conflict = Object.assign(new Error('could not serialize access'), { errno: '40001' });
    const failed = pg.transaction(
      async (tx) => {
        attempts++;
        await tx.run('UPDATE t SET v = v + 1 WHERE id = 1');
        throw conflict;
      },
      { retryConflicts: true },
    );
    await expect(failed).rejects.toBe(conflict);
    expect(attempts).toBe(CONFLICT_ATTEMPTS);
    expect(await rows()).toEqual([
      { id: 1, v: 0 },
      { id: 2, v: 0 },
    ]);
  });

  test('any other failure is not run again', async () => {
    let attempts = 0;
    const failed = pg.transaction(
      async (tx) => {
        attempts++;
        await tx.run('UPDATE t SET v = v + 1 WHERE id = 1');
        await tx.run('INSERT INTO t VALUES (2, 5)');
      },
      { retryConflicts: true },
    );
    await expect(failed).rejects.toMatchObject({ errno: '23505' });
    expect(attempts).toBe(1);
    expect(await rows()).toEqual([
      { id: 1, v: 0 },
      { id: 2, v: 0 },
    ]);
  });
});

run(title('definitions written by two processes at once'), () => {
  test('a write of definitions that deadlocks with another process (the same names upserted in another order) runs again', async () => {
    const url = await createTestDatabase();
    const pg = await openPg(url);
    try {
      await migratePostgres(pg);
      await pg.run("INSERT INTO organizations (id, name, slug, created_at, updated_at) VALUES (gen_random_uuid(), 'o', 'o', now(), now())");
      await pg.run("INSERT INTO projects (id, uuid, organization_id, api_token, name, settings, created_at, updated_at) SELECT 1, gen_random_uuid(), id, 'phc_t', 'p', '{}', now(), now() FROM organizations");
      const seen = createPostgresSeenRows(pg);
      const batch = (names: string[], at: number) => ({ events: names.map((name) => ({ teamId: 1, name, lastSeen: at })), properties: [], pairs: [] });
      const first = Date.parse('2026-01-01T00:00:00Z');
      const later = first + 60_000;
      await seen.write(batch(['x', 'y'], first), new Date(first));
      // This write upserts y, then waits for x, which the other holds; the other then wants y.
      const touch = (name: string) => [`UPDATE event_definitions SET last_seen_at = last_seen_at WHERE team_id = 1 AND name = '${name}'`] as const;
      const outcome = await againstHeldLock(url, touch('x'), () => seen.write(batch(['y', 'x'], later), new Date(later)), touch('y'));
      expect(outcome).toEqual({ value: undefined, state: null } as never);
      expect(await pg.query('SELECT name, last_seen_at FROM event_definitions WHERE team_id = 1 ORDER BY name')).toEqual([
        { name: 'x', last_seen_at: new Date(later) },
        { name: 'y', last_seen_at: new Date(later) },
      ]);
    } finally {
      await pg.close();
    }
  });
});
