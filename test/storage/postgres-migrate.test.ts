import { afterEach, describe, expect, test } from 'bun:test';
import { NewerDatabaseError, type Migration } from '../../src/storage/migrations';
import { openPg, type Pg } from '../../src/storage/postgres/client';
import { migratePostgres } from '../../src/storage/postgres/migrate';
import { postgresMigrations } from '../../src/storage/postgres/schema';
import { createTestDatabase, POSTGRES_SKIP_REASON, postgresAvailable } from '../helpers/postgres';

/**
 * The PostgreSQL management store's versioned migrations: applied once, in order, under a lock
 * shared by every process; all or nothing; and a database written by a newer version refused.
 */
const run = postgresAvailable ? describe : describe.skip;
const title = (s: string) => (postgresAvailable ? s : `${s} (skipped: ${POSTGRES_SKIP_REASON})`);

const recorded = async (pg: Pg) =>
  (await pg.query<{ version: number; name: string }>('SELECT version, name FROM schema_migrations ORDER BY version')).map((r) => ({ version: Number(r.version), name: String(r.name) }));

const tables = async (pg: Pg) =>
  (await pg.query<{ t: string }>(`SELECT table_name AS t FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`)).map((r) => String(r.t));

run(title('PostgreSQL migrations'), () => {
  const open: Pg[] = [];
  const connect = async (url: string) => {
    const pg = await openPg(url);
    open.push(pg);
    return pg;
  };
  afterEach(async () => {
    for (const pg of open.splice(0)) await pg.close();
  });

  const versions = [...postgresMigrations].sort((a, b) => a.version - b.version).map((m) => ({ version: m.version, name: m.name }));

  test('a new database gets every migration, in order; a second run applies none and keeps the data', async () => {
    const pg = await connect(await createTestDatabase());
    expect(await migratePostgres(pg)).toEqual(versions.map((v) => v.version));
    expect(await recorded(pg)).toEqual(versions);
    const before = await tables(pg);
    expect(before).toContain('organizations');
    expect(before).toContain('persons');
    await pg.run(`INSERT INTO organizations (id, name, slug, created_at, updated_at) VALUES ($1, 'kept', 'kept', now(), now())`, ['0188a1b2-0000-7000-8000-000000000001']);

    expect(await migratePostgres(pg)).toEqual([]);
    expect(await recorded(pg)).toEqual(versions);
    expect(await tables(pg)).toEqual(before);
    expect(await pg.query('SELECT name FROM organizations')).toEqual([{ name: 'kept' }]);
  });

  test("a database from before distinct ids went with their person: its links to nobody are dropped, the rest kept, and a person's delete then takes its links", async () => {
    const pg = await connect(await createTestDatabase());
    await migratePostgres(pg, postgresMigrations.filter((m) => m.version < 260));
    const [alive, gone] = ['0188a1b2-0000-7000-8000-0000000000a1', '0188a1b2-0000-7000-8000-0000000000a2'];
    await pg.run(`INSERT INTO persons (id, uuid, team_id, properties, created_at) VALUES (1, $1::uuid, 1, '{}', now())`, [alive]);
    await pg.run(`INSERT INTO person_distinct_ids (team_id, distinct_id, person_uuid) VALUES (1, 'kept', $1::uuid), (1, 'dangling', $2::uuid)`, [alive, gone]);
    expect(await migratePostgres(pg)).toEqual(versions.filter((v) => v.version >= 260).map((v) => v.version));
    const links = () => pg.query('SELECT distinct_id, person_uuid::text AS person_uuid FROM person_distinct_ids ORDER BY distinct_id');
    expect(await links()).toEqual([{ distinct_id: 'kept', person_uuid: alive }]);
    await expect(pg.run(`INSERT INTO person_distinct_ids (team_id, distinct_id, person_uuid) VALUES (1, 'again', $1::uuid)`, [gone])).rejects.toThrow(/foreign key/);
    await pg.run('DELETE FROM persons WHERE uuid = $1::uuid', [alive]);
    expect(await links()).toEqual([]);
  });

  test('a database from before group types were numbered by the home: each type keeps its index, and of two types numbered alike one takes a free index, its groups with it', async () => {
    const pg = await connect(await createTestDatabase());
    await migratePostgres(pg, postgresMigrations.filter((m) => m.version < 261));
    const group = (team: number, type: string, index: number, key: string) =>
      pg.run(`INSERT INTO groups (team_id, group_type, group_type_index, group_key, properties, created_at) VALUES ($1, $2, $3, $4, '{}', now())`, [team, type, index, key]);
    // Project 1: 'company' and 'team' both numbered 0 by two processes; 'project' 1. Project 2 apart.
    await group(1, 'company', 0, 'acme');
    await group(1, 'company', 0, 'globex');
    await group(1, 'team', 0, 'core');
    await group(1, 'project', 1, 'p');
    await group(2, 'team', 0, 'other');
    expect(await migratePostgres(pg)).toEqual(versions.filter((v) => v.version >= 261).map((v) => v.version));
    expect(await pg.query('SELECT team_id, group_type, group_type_index FROM group_type_mapping ORDER BY team_id, group_type_index')).toEqual([
      { team_id: 1, group_type: 'company', group_type_index: 0 },
      { team_id: 1, group_type: 'project', group_type_index: 1 },
      { team_id: 1, group_type: 'team', group_type_index: 2 },
      { team_id: 2, group_type: 'team', group_type_index: 0 },
    ]);
    expect(await pg.query('SELECT team_id, group_key, group_type_index FROM groups ORDER BY team_id, group_key')).toEqual([
      { team_id: 1, group_key: 'acme', group_type_index: 0 },
      { team_id: 1, group_key: 'core', group_type_index: 2 },
      { team_id: 1, group_key: 'globex', group_type_index: 0 },
      { team_id: 1, group_key: 'p', group_type_index: 1 },
      { team_id: 2, group_key: 'other', group_type_index: 0 },
    ]);
  });

  test('processes migrating one database together apply each migration once', async () => {
    const url = await createTestDatabase();
    const [a, b, c] = await Promise.all([connect(url), connect(url), connect(url)]);
    const applied = await Promise.all([migratePostgres(a), migratePostgres(b), migratePostgres(c)]);
    // One of them did all the work, the others found it done.
    expect(applied.map((list) => list.length).sort((x, y) => x - y)).toEqual([0, 0, versions.length]);
    expect(await recorded(a)).toEqual(versions);
  });

  test('a database with a migration this version does not know is refused, and nothing is applied', async () => {
    const pg = await connect(await createTestDatabase());
    const first = versions.slice(0, 1).map((v) => v.version);
    await migratePostgres(pg, postgresMigrations.filter((m) => first.includes(m.version)));
    await pg.run(`INSERT INTO schema_migrations (version, name) VALUES (99999, 'a later release''s table')`);
    const error = await migratePostgres(pg).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NewerDatabaseError);
    expect((error as Error).message).toBe(
      "The database was written by a newer version of this server (schema migrations it does not know: 99999 a later release's table). Run that version or a newer one; downgrades are not supported.",
    );
    expect((await recorded(pg)).map((r) => r.version)).toEqual([...first, 99999]);
  });

  test('a migration that fails leaves nothing of the run behind (DDL is transactional)', async () => {
    const pg = await connect(await createTestDatabase());
    const failing: Migration[] = [
      { version: 1, name: 'good', statements: ['CREATE TABLE made_by_good (id integer PRIMARY KEY)'] },
      { version: 2, name: 'bad', statements: ['CREATE TABLE made_by_bad (id integer PRIMARY KEY)', 'SELECT no_such_column FROM made_by_bad'] },
    ];
    await expect(migratePostgres(pg, failing)).rejects.toThrow(/no_such_column/);
    // The lock's own bookkeeping table is made in the same transaction: nothing at all is left.
    expect(await tables(pg)).toEqual([]);
    // Fixed, the same run applies both.
    const fixed = [failing[0], { ...failing[1], statements: ['CREATE TABLE made_by_bad (id integer PRIMARY KEY)'] }];
    expect(await migratePostgres(pg, fixed)).toEqual([1, 2]);
    expect(await tables(pg)).toEqual(['made_by_bad', 'made_by_good', 'schema_migrations']);
  });
});
