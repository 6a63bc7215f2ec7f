import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PersonEvent } from '../../../src/core/ingest/person-updates';
import { trusted } from '../../../src/core/query';
import { openClickHouse, parseClickHouseUrl, type ClickHouse } from '../../../src/storage/clickhouse/client';
import { clickhousePersonMirror, clickhousePersonRelations } from '../../../src/storage/clickhouse/persons-table';
import { migrateClickHouse } from '../../../src/storage/clickhouse/schema';
import { openDatabase, type Database } from '../../../src/storage/db';
import { migrate } from '../../../src/storage/migrations';
import { createPersonStore } from '../../../src/storage/persons/person-store';
import type { PersonChanges, PersonMirror, PersonStore } from '../../../src/storage/persons/types';
import { CLICKHOUSE_SKIP_REASON, chdbClient, clickhouseServerAvailable, clickhouseServerUrl, testDatabaseName } from '../../helpers/clickhouse';
import { personEvent } from '../../helpers/person-event';

/**
 * The person store's copy of persons in ClickHouse (persons-table.ts): what a project's persons
 * relation reads after flushes, merges, deletions and failed flushes, on chDB and on 18.16. The
 * events API over it is test/modules/events-clickhouse.test.ts.
 */
const engines: Array<{ name: string; available: boolean; reason: string; open: () => Promise<ClickHouse> }> = [
  { name: 'chDB (modern)', available: true, reason: '', open: async () => openClickHouse({ client: await chdbClient(), database: testDatabaseName() }) },
  { name: 'ClickHouse 18.16 server', available: clickhouseServerAvailable, reason: CLICKHOUSE_SKIP_REASON, open: async () => openClickHouse(parseClickHouseUrl(await clickhouseServerUrl())) },
];

let n = 0;
const ev = (event: string, distinctId: string, extra: Partial<PersonEvent> = {}): PersonEvent =>
  personEvent({ uuid: `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`, event, distinctId, timestamp: 1_700_000_000_000 + n * 1000, ...extra });

for (const engine of engines) {
  const run = engine.available ? describe : describe.skip;
  run(`persons copied into ClickHouse on ${engine.name}${engine.available ? '' : ` (skipped: ${engine.reason})`}`, () => {
    let ch: ClickHouse;
    let dir: string;
    let db: Database;
    let team = 500;
    beforeAll(async () => {
      ch = await engine.open();
      await migrateClickHouse(ch);
    });
    afterAll(async () => {
      await ch?.close();
    });
    beforeEach(async () => {
      dir = await mkdtemp(join(tmpdir(), 'persons-ch-'));
      db = await openDatabase(join(dir, 'db.duckdb'));
      await migrate(db);
      team++;
    });
    afterEach(async () => {
      await db.close();
      await rm(dir, { recursive: true, force: true });
    });

    /** Properties without the creating event's uuid the person store adds. */
    const withoutCreator = ({ $creator_event_uuid: _, ...rest }: Record<string, unknown>) => rest;
    /** A project's persons as the events API's statements read them: one row per distinct id. */
    const personsOf = async (teamId: number) =>
      (
        await ch.query<{ id: string; distinct_id: string; properties: string; is_identified: number | string }>(
          trusted(`SELECT id, pdi_distinct_id AS distinct_id, properties, is_identified FROM ${clickhousePersonRelations(ch).personsRelation(teamId, { distinctIds: true })} ORDER BY distinct_id`),
        )
      ).map((r) => ({ id: r.id, distinctId: r.distinct_id, properties: withoutCreator(JSON.parse(r.properties)), identified: Number(r.is_identified) === 1 }));

    const open = async (mirror: PersonMirror = clickhousePersonMirror(ch)): Promise<PersonStore> => {
      const store = createPersonStore(db, undefined, mirror);
      await store.ensureLoaded(team);
      return store;
    };

    test('a flush is copied; a later $set and a merge are what is read, before any merge of parts', async () => {
      const store = await open();
      store.processEvent(team, ev('$pageview', 'anon', { set: { plan: 'free' } }));
      store.processEvent(team, ev('$pageview', 'user', { set: { plan: 'trial', email: 'u@example.com' } }));
      await store.flush();
      const user = store.findByDistinctId(team, 'user')!;
      const anon = store.findByDistinctId(team, 'anon')!;
      expect(await personsOf(team)).toEqual([
        { id: anon.uuid, distinctId: 'anon', properties: { plan: 'free' }, identified: false },
        { id: user.uuid, distinctId: 'user', properties: { plan: 'trial', email: 'u@example.com' }, identified: false },
      ]);
      store.processEvent(team, ev('$identify', 'user', { anonDistinctId: 'anon' }));
      store.processEvent(team, ev('$set', 'user', { set: { plan: 'pro' } }));
      await store.flush();
      expect(await personsOf(team)).toEqual([
        { id: user.uuid, distinctId: 'anon', properties: { plan: 'pro', email: 'u@example.com' }, identified: true },
        { id: user.uuid, distinctId: 'user', properties: { plan: 'pro', email: 'u@example.com' }, identified: true },
      ]);
    });

    test('a deletion is a newer row that hides the person and their distinct ids at once; erasure then removes the older rows', async () => {
      const store = await open();
      store.processEvent(team, ev('$pageview', 'gone', { set: { email: 'gone@example.com' } }));
      store.processEvent(team, ev('$pageview', 'kept'));
      await store.flush();
      const gone = store.findByDistinctId(team, 'gone')!;
      // The tombstones alone, as a flush writes a person merged away: no mutation involved.
      await clickhousePersonMirror(ch).write({ persons: [{ teamId: team, uuid: gone.uuid, person: null }], distinctIds: [{ teamId: team, distinctId: 'gone', personUuid: null }], groups: [] });
      expect((await personsOf(team)).map((p) => p.distinctId)).toEqual(['kept']);
      // The persons table alone (HogQL's `FROM persons` without `pdi`): the person too.
      const ids = await ch.query<{ id: string }>(trusted(`SELECT id FROM ${clickhousePersonRelations(ch).personsRelation(team)}`));
      expect(ids.map((r) => r.id)).toEqual([store.findByDistinctId(team, 'kept')!.uuid]);
      const rowsOf = async (where: string) => Number((await ch.query<{ n: string | number }>(trusted(`SELECT count() AS n FROM ${ch.table('persons')} WHERE team_id = ${team} AND ${where}`)))[0]!.n);
      expect(await rowsOf(`toString(id) = '${gone.uuid}'`)).toBe(2);

      await store.deletePerson(team, gone.uuid);
      expect((await personsOf(team)).map((p) => p.distinctId)).toEqual(['kept']);
      // Mutations, applied in the background (18.16 cannot be asked to wait for them): bounded polling.
      for (let i = 0; i < 200 && (await rowsOf(`toString(id) = '${gone.uuid}' AND is_deleted = 0`)) > 0; i++) await Bun.sleep(100);
      expect(await rowsOf(`toString(id) = '${gone.uuid}' AND is_deleted = 0`)).toBe(0);
      expect(await rowsOf(`position(properties, 'gone@example.com') > 0`)).toBe(0);
      expect(await rowsOf(`is_deleted = 0`)).toBe(1);
    });

    test('a flush the copy fails is kept, and the next flush writes it whole', async () => {
      const real = clickhousePersonMirror(ch);
      let failures = 1;
      const flaky: PersonMirror = {
        ...real,
        async write(changes: PersonChanges) {
          // The persons' INSERT reached the server, the distinct ids' did not.
          await real.write({ ...changes, distinctIds: [] });
          if (failures-- > 0) throw new Error('the events database is not reachable');
          await real.write(changes);
        },
      };
      const store = await open(flaky);
      store.processEvent(team, ev('$pageview', 'late', { set: { plan: 'free' } }));
      await expect(store.flush()).rejects.toThrow('not reachable');
      expect(await personsOf(team)).toEqual([]);
      expect(store.pendingChanges()).toBeGreaterThan(0);
      await store.flush();
      expect(await personsOf(team)).toEqual([{ id: store.findByDistinctId(team, 'late')!.uuid, distinctId: 'late', properties: { plan: 'free' }, identified: false }]);
    });

    test('persons made before the copy existed are copied whole at their project\'s first load, once', async () => {
      const before = createPersonStore(db);
      await before.ensureLoaded(team);
      before.processEvent(team, ev('$pageview', 'old', { set: { plan: 'old' } }));
      await before.flush();
      expect(await personsOf(team)).toEqual([]);
      const store = await open();
      const old = store.findByDistinctId(team, 'old')!;
      expect(await personsOf(team)).toEqual([{ id: old.uuid, distinctId: 'old', properties: { plan: 'old' }, identified: false }]);
      const rows = async () => Number((await ch.query<{ n: string | number }>(trusted(`SELECT count() AS n FROM ${ch.table('persons')} WHERE team_id = ${team}`)))[0]!.n);
      expect(await rows()).toBe(1);
      // Another process (or a restart) loading the project: nothing written again.
      await (await open()).flush();
      expect(await rows()).toBe(1);
    });

    test("a project's first copy larger than one insert is written in parts, every person and distinct id in one of them", async () => {
      const before = createPersonStore(db);
      await before.ensureLoaded(team);
      for (let i = 0; i < 5; i++) before.processEvent(team, ev('$pageview', `p-${i}`, { set: { i } }));
      before.processEvent(team, ev('$identify', 'p-0-user', { anonDistinctId: 'p-0' }));
      await before.flush();
      const inserts: string[] = [];
      const counted: ClickHouse = {
        ...ch,
        insertTabSeparated: (table, columns, rows) => {
          inserts.push(table);
          return ch.insertTabSeparated(table, columns, rows);
        },
      };
      await open(clickhousePersonMirror(counted, { rowsPerInsert: 2 }));
      // 5 persons and 6 distinct ids, 2 rows an insert.
      expect(inserts).toEqual([...Array(3).fill(ch.table('persons')), ...Array(3).fill(ch.table('person_distinct_ids'))]);
      expect((await personsOf(team)).map((p) => [p.distinctId, p.properties.i])).toEqual([
        ['p-0', 0],
        ['p-0-user', 0],
        ['p-1', 1],
        ['p-2', 2],
        ['p-3', 3],
        ['p-4', 4],
      ]);
    });

    test('a load does not wait for an unreachable copy: the next flush copies the project first', async () => {
      const before = createPersonStore(db);
      await before.ensureLoaded(team);
      before.processEvent(team, ev('$pageview', 'early', { set: { plan: 'early' } }));
      await before.flush();
      const real = clickhousePersonMirror(ch);
      let down = true;
      const flaky: PersonMirror = {
        ...real,
        seed: async (teamId, all) => {
          if (down) throw new Error('the events database is not reachable');
          return real.seed(teamId, all);
        },
      };
      const store = await open(flaky);
      expect(store.findByDistinctId(team, 'early')).not.toBeNull();
      expect(await personsOf(team)).toEqual([]);
      down = false;
      await store.flush();
      expect((await personsOf(team)).map((p) => p.distinctId)).toEqual(['early']);
    });

    test('a process whose clock is behind the versions written before still writes newer rows', async () => {
      const store = await open(clickhousePersonMirror(ch, { now: () => Date.now() + 3_600_000 }));
      store.processEvent(team, ev('$pageview', 'clocked', { set: { plan: 'ahead' } }));
      await store.flush();
      const person = store.findByDistinctId(team, 'clocked')!;
      // A restart after the clock stepped back an hour.
      const later = clickhousePersonMirror(ch);
      await later.write({ persons: [{ teamId: team, uuid: person.uuid, person: { ...person, properties: { plan: 'behind' } } }], distinctIds: [], groups: [] });
      expect((await personsOf(team)).map((p) => p.properties)).toEqual([{ plan: 'behind' }]);
    });

    test("projects are apart, and a deleted project's persons are gone", async () => {
      const store = await open();
      await store.ensureLoaded(team + 1000);
      store.processEvent(team, ev('$pageview', 'same-id', { set: { project: 'a' } }));
      store.processEvent(team + 1000, ev('$pageview', 'same-id', { set: { project: 'b' } }));
      await store.flush();
      expect((await personsOf(team)).map((p) => p.properties)).toEqual([{ project: 'a' }]);
      expect((await personsOf(team + 1000)).map((p) => p.properties)).toEqual([{ project: 'b' }]);
      await store.deleteTeam(team + 1000);
      for (let i = 0; i < 200 && (await personsOf(team + 1000)).length > 0; i++) await Bun.sleep(100);
      expect(await personsOf(team + 1000)).toEqual([]);
      expect((await personsOf(team)).map((p) => p.properties)).toEqual([{ project: 'a' }]);
    });
  });
}
