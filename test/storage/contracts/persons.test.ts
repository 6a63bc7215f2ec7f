import { afterEach, beforeEach, expect, test } from 'bun:test';
import type { PersonEvent } from '../../../src/core/ingest/person-updates';
import { STAGED_ROWS } from '../../../src/storage/persons/person-store';
import type { Person, PersonStore } from '../../../src/storage/persons/types';
import { openPg, type Pg } from '../../../src/storage/postgres/client';
import { LOAD_PAGE_ROWS } from '../../../src/storage/postgres/person-home';
import { personEvent } from '../../helpers/person-event';
import { againstHeldLock } from '../../helpers/postgres';
import { createProjects, eventually, forEachEngine, type Opened } from './engines';

let n = 0;
const ev = (event: string, distinctId: string, extra: Partial<PersonEvent> = {}): PersonEvent =>
  personEvent({ uuid: `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`, event, distinctId, timestamp: 1_700_000_000_000 + n * 1_001, ...extra });

const SEQUENCE: PersonEvent[] = [
  ev('$pageview', 'anon-1', { set: { $browser: 'Chrome' }, setOnce: { $initial_browser: 'Chrome' } }),
  ev('$pageview', 'anon-2', { set: { plan: 'free', nested: { b: 1, a: [1, 2] } } }),
  ev('$identify', 'user-1', { anonDistinctId: 'anon-1', set: { email: 'u1@example.com' } }),
  ev('$create_alias', 'user-1', { alias: 'anon-2' }),
  ev('signup', 'user-2', { setOnce: { first_seen: 'a' } }),
  ev('$groupidentify', 'user-2', { properties: { $group_type: 'company', $group_key: 'acme', $group_set: { size: 10 } } }),
  ev('$groupidentify', 'user-2', { properties: { $group_type: 'team', $group_key: 'core', $group_set: { name: 'Core' } } }),
  ev('$set', 'user-1', { unset: ['plan'] }),
];

/** Everything the store says of a project, in a stable order. */
function snapshot(store: PersonStore, teamId: number) {
  const persons = store.listPersons(teamId, () => true, { limit: 1_000_000, offset: 0 }).results.map((p: Person) => ({ ...p, distinctIds: [...p.distinctIds].sort() }));
  persons.sort((a, b) => a.id - b.id);
  return { persons, groupTypes: store.groupTypeMapping(teamId), acme: store.findGroup(teamId, 'company', 'acme'), core: store.findGroup(teamId, 'team', 'core') };
}

/** PersonStore: persons in memory per project, written in bulk, loaded back. */
forEachEngine('person store', (engine) => {
  let opened: Opened;
  beforeEach(async () => {
    opened = await engine.open();
    await createProjects(opened.stores, 2);
  });
  afterEach(async () => {
    await opened.close();
  });
  const persons = () => opened.stores.persons;
  /** `fn` with a connection of its own to the home's database (as another process sees it), closed after. */
  const atHome = async <T>(fn: (pg: Pg) => Promise<T>): Promise<T> => {
    const pg = await openPg(opened.metaStore!);
    try {
      return await fn(pg);
    } finally {
      await pg.close();
    }
  };
  const apply = async (teamId: number, events: PersonEvent[]) => {
    await persons().ensureLoaded(teamId);
    for (const e of events) persons().processEvent(teamId, e);
  };
  /** What DuckDB's copy (the events side's join) holds of a project. */
  const copied = async (teamId: number) =>
    (
      await opened.db.query<{ uuid: string; properties: string; ids: string[] }>(
        `SELECT p.uuid::VARCHAR AS uuid, p.properties, list(d.distinct_id ORDER BY d.distinct_id) AS ids FROM persons p
         JOIN person_distinct_ids d ON d.person_uuid = p.uuid AND d.team_id = p.team_id WHERE p.team_id = ? GROUP BY ALL ORDER BY uuid`,
        [teamId],
      )
    ).map((r) => ({ uuid: r.uuid, properties: JSON.parse(r.properties), ids: [...r.ids] }));

  test('merges, $set/$unset and groups in memory, then the same after a flush and a restart, and in the events side copy', async () => {
    await apply(1, SEQUENCE);
    const before = snapshot(persons(), 1);
    expect(before.persons.map((p) => p.distinctIds)).toEqual([['anon-1', 'anon-2', 'user-1'], ['user-2']]);
    expect(before.persons[0].properties).toMatchObject({ $browser: 'Chrome', $initial_browser: 'Chrome', email: 'u1@example.com', nested: { b: 1, a: [1, 2] } });
    expect(before.persons[0].properties).not.toHaveProperty('plan');
    expect(before.persons[0].isIdentified).toBe(true);
    expect(before.groupTypes).toEqual({ company: 0, team: 1 });
    expect(before.acme?.properties).toEqual({ size: 10 });
    await persons().flush();
    expect(persons().pendingChanges()).toBe(0);
    opened = await opened.reopen();
    expect(persons().isLoaded(1)).toBe(false);
    await persons().ensureLoaded(1);
    const after = snapshot(persons(), 1);
    expect(after).toEqual(before);
    expect(JSON.stringify(after.persons[0].properties.nested)).toBe('{"b":1,"a":[1,2]}');
    expect(persons().findByDistinctId(1, 'anon-2')?.uuid).toBe(before.persons[0].uuid);
    expect(persons().findById(1, before.persons[1].id)?.uuid).toBe(before.persons[1].uuid);
    expect(await copied(1)).toEqual(
      before.persons.map((p) => ({ uuid: p.uuid, properties: p.properties, ids: p.distinctIds })).sort((a, b) => (a.uuid < b.uuid ? -1 : 1)),
    );
  });

  test('projects are apart: one distinct id is two persons; deleting a project removes only its own', async () => {
    await apply(1, [ev('e', 'same', { set: { team: 1 } })]);
    await apply(2, [ev('e', 'same', { set: { team: 2 } })]);
    const one = persons().findByDistinctId(1, 'same')!;
    const two = persons().findByDistinctId(2, 'same')!;
    expect(one.uuid).not.toBe(two.uuid);
    expect(one.id).not.toBe(two.id);
    expect(persons().findByUuid(2, one.uuid)).toBeNull();
    expect(persons().setProperties(1, one.uuid, { extra: true })?.properties).toMatchObject({ team: 1, extra: true });
    expect(persons().setProperties(2, one.uuid, { extra: true })).toBeNull();
    await persons().flush();
    await persons().deleteTeam(2);
    opened = await opened.reopen();
    await persons().ensureLoaded(1);
    await persons().ensureLoaded(2);
    expect(persons().findByDistinctId(1, 'same')?.properties).toMatchObject({ team: 1, extra: true });
    expect(persons().findByDistinctId(2, 'same')).toBeNull();
    expect(await copied(2)).toEqual([]);
  });

  test('a project larger than a page of its load and a part of its flush: every person, distinct id and group after a restart, and in the events side copy', async () => {
    // More persons than a flush stages in one statement and than a load reads a page at a time
    // from PostgreSQL; more distinct ids than either too.
    const count = Math.max(STAGED_ROWS, LOAD_PAGE_ROWS) + 1_002;
    await persons().ensureLoaded(1);
    for (let i = 0; i < count; i++) {
      persons().processEvent(1, ev('$pageview', `anon-${i}`, { set: { i } }));
      if (i % 3 === 0) persons().processEvent(1, ev('$identify', `user-${i}`, { anonDistinctId: `anon-${i}`, set: { email: `u${i}@example.com` } }));
    }
    persons().processEvent(1, ev('$groupidentify', 'user-0', { properties: { $group_type: 'company', $group_key: 'acme', $group_set: { size: 10 } } }));
    persons().processEvent(1, ev('$groupidentify', 'user-3', { properties: { $group_type: 'team', $group_key: 'core', $group_set: { name: 'Core' } } }));
    await persons().flush();
    const before = snapshot(persons(), 1);
    expect(before.persons.length).toBe(count);
    expect(before.persons.reduce((ids, p) => ids + p.distinctIds.length, 0)).toBe(count + Math.ceil(count / 3));
    opened = await opened.reopen();
    await persons().ensureLoaded(1);
    expect(snapshot(persons(), 1)).toEqual(before);
    expect(await copied(1)).toEqual(
      before.persons.map((p) => ({ uuid: p.uuid, properties: p.properties, ids: p.distinctIds })).sort((a, b) => (a.uuid < b.uuid ? -1 : 1)),
    );
  }, 60_000);

  test("a project's sixth group type is not recorded (PostHog's five, indexes 0–4); its first five are, across a restart", async () => {
    await persons().ensureLoaded(1);
    const types = ['company', 'team', 'project', 'region', 'plan', 'sixth'];
    for (const type of types) persons().processEvent(1, ev('$groupidentify', 'u', { properties: { $group_type: type, $group_key: 'k', $group_set: { type } } }));
    const five = { company: 0, team: 1, project: 2, region: 3, plan: 4 };
    expect(persons().groupTypeMapping(1)).toEqual(five);
    expect(persons().findGroup(1, 'sixth', 'k')).toBeNull();
    await persons().flush();
    opened = await opened.reopen({ sameFiles: true });
    await persons().ensureLoaded(1);
    expect(persons().groupTypeMapping(1)).toEqual(five);
    expect(await opened.db.query('SELECT group_type, group_type_index FROM groups WHERE team_id = 1 ORDER BY group_type_index')).toEqual(
      Object.entries(five).map(([group_type, group_type_index]) => ({ group_type, group_type_index })),
    );
  });

  test('ids: positive and unique, kept across a restart, however many persons one batch makes', async () => {
    await persons().ensureLoaded(1);
    for (let i = 0; i < 600; i++) persons().processEvent(1, ev('e', `bulk-${i}`));
    await persons().flush();
    const ids = snapshot(persons(), 1).persons.map((p) => p.id);
    expect(ids.every((id) => Number.isSafeInteger(id) && id > 0)).toBe(true);
    expect(new Set(ids).size).toBe(600);
    const byDistinctId = Object.fromEntries(snapshot(persons(), 1).persons.map((p) => [p.distinctIds[0], p.id]));
    opened = await opened.reopen();
    await persons().ensureLoaded(1);
    expect(Object.fromEntries(snapshot(persons(), 1).persons.map((p) => [p.distinctIds[0], p.id]))).toEqual(byDistinctId);
    await apply(1, [ev('e', 'after-restart')]);
    expect(ids).not.toContain(persons().findByDistinctId(1, 'after-restart')!.id);
  });

  if (engine.name === 'postgres') {
    test('a restart on its DuckDB files brings their copy to what the home holds, changes another process made meanwhile included', async () => {
      await apply(1, [
        ev('$pageview', 'stays', { set: { n: 1 } }),
        ev('$pageview', 'changes', { set: { plan: 'free' } }),
        ev('$pageview', 'goes'),
        ev('$pageview', 'anon-m'),
        ev('$pageview', 'user-m', { set: { email: 'm@example.com' } }),
        ev('$groupidentify', 'stays', { properties: { $group_type: 'company', $group_key: 'acme', $group_set: { size: 1 } } }),
      ]);
      await persons().flush();
      opened = await opened.reopen({ sameFiles: true });
      // While this process has not loaded the project (nothing of it to patch), another changes it.
      const other = await opened.another();
      try {
        await other.stores.persons.ensureLoaded(1);
        const theirs = other.stores.persons;
        theirs.processEvent(1, ev('$set', 'changes', { set: { plan: 'pro' } }));
        theirs.processEvent(1, ev('$identify', 'user-m', { anonDistinctId: 'anon-m' }));
        theirs.processEvent(1, ev('$pageview', 'new', { set: { fresh: true } }));
        theirs.processEvent(1, ev('$groupidentify', 'stays', { properties: { $group_type: 'company', $group_key: 'acme', $group_set: { size: 2 } } }));
        await theirs.flush();
        await theirs.deletePerson(1, theirs.findByDistinctId(1, 'goes')!.uuid);
      } finally {
        await other.close();
      }
      await persons().ensureLoaded(1);
      const now = snapshot(persons(), 1);
      expect(now.persons.map((p) => p.distinctIds)).toEqual([['stays'], ['changes'], ['anon-m', 'user-m'], ['new']]);
      expect(now.acme?.properties).toEqual({ size: 2 });
      expect(await copied(1)).toEqual(
        now.persons.map((p) => ({ uuid: p.uuid, properties: p.properties, ids: p.distinctIds })).sort((a, b) => (a.uuid < b.uuid ? -1 : 1)),
      );
      expect(await opened.db.query('SELECT group_key, properties FROM groups WHERE team_id = 1')).toEqual([{ group_key: 'acme', properties: '{"size":2}' }]);
    });

    /** A group of `type` (key `key`) met by `store`'s process, from `distinctId`. */
    const meetGroup = (store: PersonStore, distinctId: string, type: string, key = 'k') =>
      store.processEvent(1, ev('$groupidentify', distinctId, { properties: { $group_type: type, $group_key: key, $group_set: { type } } }));

    /**
     * `run` with another process on the same home, both with project 1 loaded. Its persons 'u'
     * and 'v' are made first: the groups' flushes then change no person, so no notice starts a
     * reread in the other process meanwhile.
     */
    async function besideAnother(run: (other: Opened) => Promise<void>) {
      await apply(1, [ev('$pageview', 'u'), ev('$pageview', 'v')]);
      await persons().flush();
      const other = await opened.another();
      try {
        await other.stores.persons.ensureLoaded(1);
        await run(other);
      } finally {
        await other.close();
      }
    }

    const homeGroups = () =>
      atHome((pg) => pg.query<{ group_type: string; group_type_index: number }>('SELECT group_type, group_type_index FROM groups WHERE team_id = 1 ORDER BY group_type_index'));

    test('two processes each meeting a new group type: the home gives each type its own index, and each process and its copy take it', async () => {
      await besideAnother(async (other) => {
        const theirs = other.stores.persons;
        // Each numbers its new type 0, not knowing the other's.
        meetGroup(persons(), 'u', 'company');
        meetGroup(theirs, 'v', 'team');
        expect([persons().groupTypeMapping(1), theirs.groupTypeMapping(1)]).toEqual([{ company: 0 }, { team: 0 }]);
        await persons().flush();
        // A third type met while the other's flush runs takes index 1 there, which the home gives 'team'.
        const flushing = theirs.flush();
        meetGroup(theirs, 'v', 'project');
        await flushing;
        expect(theirs.findGroup(1, 'team', 'k')?.groupTypeIndex).toBe(1);
        // One index never names two types: the one not written yet moves to an index free there.
        expect(theirs.groupTypeMapping(1)).toEqual({ team: 1, project: 0 });
        await theirs.flush();
        expect(theirs.groupTypeMapping(1)).toEqual({ team: 1, project: 2 });
        expect(await other.db.query('SELECT group_type, group_type_index FROM groups WHERE team_id = 1 ORDER BY group_type_index')).toEqual([
          { group_type: 'team', group_type_index: 1 },
          { group_type: 'project', group_type_index: 2 },
        ]);
      });
      expect(await homeGroups()).toEqual(['company', 'team', 'project'].map((group_type, group_type_index) => ({ group_type, group_type_index })));
      // A process loading the project afresh holds the home's numbering.
      opened = await opened.reopen({ sameFiles: true });
      await persons().ensureLoaded(1);
      expect(persons().groupTypeMapping(1)).toEqual({ company: 0, team: 1, project: 2 });
    });

    test("two processes meeting new group types apart past the project's five: the home records five, and the type it has no index left for is recorded nowhere", async () => {
      await besideAnother(async (other) => {
        const theirs = other.stores.persons;
        for (const type of ['a', 'b', 'c']) meetGroup(persons(), 'u', type);
        for (const type of ['d', 'e', 'f']) meetGroup(theirs, 'v', type);
        await persons().flush();
        await theirs.flush();
        expect(theirs.groupTypeMapping(1)).toEqual({ d: 3, e: 4 });
        expect(theirs.findGroup(1, 'f', 'k')).toBeNull();
        expect(await other.db.query('SELECT group_type, group_type_index FROM groups WHERE team_id = 1 ORDER BY group_type_index')).toEqual([
          { group_type: 'd', group_type_index: 3 },
          { group_type: 'e', group_type_index: 4 },
        ]);
        // Met again later: still not recorded.
        meetGroup(theirs, 'v', 'f');
        await theirs.flush();
        expect(theirs.findGroup(1, 'f', 'k')).toBeNull();
      });
      expect(await homeGroups()).toEqual(['a', 'b', 'c', 'd', 'e'].map((group_type, group_type_index) => ({ group_type, group_type_index })));
    });

    test('a restart on its DuckDB files leaves the rows of the copy that hold what the home holds: a group keeps its row and created_at', async () => {
      await apply(1, [
        ev('$groupidentify', 'u', { properties: { $group_type: 'company', $group_key: 'acme', $group_set: { size: 1 } } }),
        ev('$groupidentify', 'u', { properties: { $group_type: 'company', $group_key: 'globex', $group_set: { size: 5 } } }),
      ]);
      await persons().flush();
      const groupRows = () => opened.db.query<{ group_key: string; properties: string; created_at: Date }>('SELECT group_key, properties, created_at FROM groups WHERE team_id = 1 ORDER BY group_key');
      // Written one at a time: apart by the clock.
      await opened.db.run("UPDATE groups SET created_at = TIMESTAMP '2024-01-02 03:04:05' WHERE team_id = 1");
      opened = await opened.reopen({ sameFiles: true });
      const other = await opened.another();
      try {
        await other.stores.persons.ensureLoaded(1);
        other.stores.persons.processEvent(1, ev('$groupidentify', 'u', { properties: { $group_type: 'company', $group_key: 'globex', $group_set: { size: 6 } } }));
        await other.stores.persons.flush();
      } finally {
        await other.close();
      }
      await persons().ensureLoaded(1);
      const rows = await groupRows();
      expect(rows.map((r) => [r.group_key, r.properties])).toEqual([
        ['acme', '{"size":1}'],
        ['globex', '{"size":6}'],
      ]);
      // The unchanged group's row is the one it had; the changed one is updated in place.
      expect(rows.map((r) => r.created_at.toISOString())).toEqual(['2024-01-02T03:04:05.000Z', '2024-01-02T03:04:05.000Z']);
    });

    test('a copy holding a person of the project under another project (older than the home) is put right by the restart', async () => {
      await apply(1, [ev('$pageview', 'moved', { set: { n: 1 } }), ev('$pageview', 'stays', { set: { n: 2 } })]);
      await persons().flush();
      const uuid = persons().findByDistinctId(1, 'moved')!.uuid;
      opened = await opened.reopen({ sameFiles: true });
      // The copy's row of that person sits under project 2: the load finds it missing from project
      // 1's rows, and its append meets the row's uuid.
      await opened.db.run('UPDATE persons SET team_id = 2 WHERE uuid = ?::UUID', [uuid]);
      await opened.db.run('UPDATE person_distinct_ids SET team_id = 2 WHERE person_uuid = ?::UUID', [uuid]);
      // And the other's id under another uuid, in project 2: its append meets the id.
      const stays = (await opened.db.query<{ uuid: string }>("SELECT p.uuid::VARCHAR AS uuid FROM persons p JOIN person_distinct_ids d ON d.person_uuid = p.uuid WHERE d.distinct_id = 'stays'"))[0]!.uuid;
      await opened.db.run("UPDATE persons SET team_id = 2, uuid = '00000000-0000-4000-8000-0000000000ff' WHERE uuid = ?::UUID", [stays]);
      await persons().ensureLoaded(1);
      const now = snapshot(persons(), 1);
      expect(now.persons.map((p) => [p.distinctIds, p.properties.n])).toEqual([
        [['moved'], 1],
        [['stays'], 2],
      ]);
      expect(await copied(1)).toEqual(
        now.persons.map((p) => ({ uuid: p.uuid, properties: p.properties, ids: p.distinctIds })).sort((a, b) => (a.uuid < b.uuid ? -1 : 1)),
      );
      expect(await opened.db.query('SELECT count(*)::INTEGER AS n FROM persons WHERE uuid = ?::UUID', [uuid])).toEqual([{ n: 1 }]);
      expect(await opened.db.query("SELECT count(*)::INTEGER AS n FROM persons WHERE uuid = '00000000-0000-4000-8000-0000000000ff'")).toEqual([{ n: 0 }]);
    });

    test("a person another process deleted, its notice not read here yet, is not written back by this one's flush (nor its distinct ids)", async () => {
      await apply(1, [ev('$pageview', 'victim', { set: { email: 'v@example.com' } }), ev('$pageview', 'bystander', { set: { n: 1 } })]);
      await persons().flush();
      const victim = persons().findByDistinctId(1, 'victim')!.uuid;
      // Changes to them here, pending: a $set and a new distinct id.
      persons().setProperties(1, victim, { late: true });
      persons().processEvent(1, ev('$identify', 'victim-user', { anonDistinctId: 'victim' }));
      persons().setProperties(1, persons().findByDistinctId(1, 'bystander')!.uuid, { n: 2 });
      persons().processEvent(1, ev('$pageview', 'newcomer', { set: { n: 3 } }));
      // Another process's erasure, committed; its notice has not reached this process.
      await atHome(async (pg) => {
        await pg.run('DELETE FROM person_distinct_ids WHERE person_uuid = $1::uuid', [victim]);
        await pg.run('DELETE FROM persons WHERE uuid = $1::uuid', [victim]);
        await persons().flush();
        expect(await pg.query('SELECT count(*)::int AS n FROM persons WHERE uuid = $1::uuid', [victim])).toEqual([{ n: 0 }]);
        expect(await pg.query('SELECT distinct_id FROM person_distinct_ids WHERE team_id = 1 ORDER BY distinct_id')).toEqual([{ distinct_id: 'bystander' }, { distinct_id: 'newcomer' }]);
        // The other changes of the same flush are written.
        const rows = await pg.query<{ properties: string }>('SELECT properties::text AS properties FROM persons WHERE team_id = 1', []);
        expect(rows.map((r) => JSON.parse(r.properties).n).sort()).toEqual([2, 3]);
      });
    });

    test("a flush the home took and DuckDB's copy failed is not written to the home again over another process's later change", async () => {
      await apply(1, [ev('$pageview', 'x', { set: { v: 1 } }), ev('$pageview', 'z', { set: { v: 1 } })]);
      await persons().flush();
      const x = persons().findByDistinctId(1, 'x')!.uuid;
      const z = persons().findByDistinctId(1, 'z')!.uuid;
      const other = await opened.another();
      try {
        const theirs = other.stores.persons;
        await theirs.ensureLoaded(1);
        persons().setProperties(1, x, { a: 1 });
        // The home takes the flush; the copy beside the events does not.
        await opened.db.run('ALTER TABLE persons RENAME TO persons_away');
        await expect(persons().flush()).rejects.toThrow();
        await eventually(() => theirs.findByUuid(1, x)?.properties.a, (a) => a === 1);
        theirs.setProperties(1, x, { b: 2 });
        // And a person this process has no change of: read in while its copy fails.
        theirs.setProperties(1, z, { c: 3 });
        await theirs.flush();
        // Read into this process's memory (its DuckDB copy still failing).
        expect(await eventually(() => persons().findByUuid(1, x)?.properties.b, (b) => b === 2)).toBe(2);
        expect(await eventually(() => persons().findByUuid(1, z)?.properties.c, (c) => c === 3)).toBe(3);
        await opened.db.run('ALTER TABLE persons_away RENAME TO persons');
        await persons().flush();
        await atHome(async (pg) => {
          const [row] = await pg.query<{ properties: string }>('SELECT properties::text AS properties FROM persons WHERE uuid = $1::uuid', [x]);
          expect(JSON.parse(row!.properties)).toMatchObject({ v: 1, a: 1, b: 2 });
        });
        expect((await copied(1)).find((p) => p.uuid === x)?.properties).toMatchObject({ v: 1, a: 1, b: 2 });
        expect((await copied(1)).find((p) => p.uuid === z)?.properties).toMatchObject({ v: 1, c: 3 });
      } finally {
        await other.close();
      }
    });

    test('a person made here whose first write PostgreSQL refused is written by the next flush', async () => {
      await apply(1, [ev('$pageview', 'first', { set: { n: 1 } })]);
      await persons().flush();
      await atHome(async (pg) => {
        persons().processEvent(1, ev('$pageview', 'newcomer', { set: { n: 2 } }));
        await pg.run('ALTER TABLE persons RENAME TO persons_away');
        await expect(persons().flush()).rejects.toThrow();
        await pg.run('ALTER TABLE persons_away RENAME TO persons');
        await persons().flush();
        const rows = await pg.query<{ distinct_id: string; n: number }>(
          "SELECT d.distinct_id, (p.properties->>'n')::int AS n FROM person_distinct_ids d JOIN persons p ON p.uuid = d.person_uuid WHERE d.team_id = 1 ORDER BY d.distinct_id",
        );
        expect(rows).toEqual([
          { distinct_id: 'first', n: 1 },
          { distinct_id: 'newcomer', n: 2 },
        ]);
      });
    });

    test('a merge into a person another process deleted meanwhile leaves no distinct id pointing at nobody', async () => {
      await apply(1, [ev('$pageview', 'dx', { set: { n: 1 } }), ev('$pageview', 'dy', { set: { n: 2 } })]);
      await persons().flush();
      const y = persons().findByDistinctId(1, 'dy')!.uuid;
      // dx's person merged into dy's here, pending; dy's person erased elsewhere, its notice not read.
      persons().processEvent(1, ev('$identify', 'dy', { anonDistinctId: 'dx' }));
      await atHome(async (pg) => {
        await pg.run('DELETE FROM person_distinct_ids WHERE person_uuid = $1::uuid', [y]);
        await pg.run('DELETE FROM persons WHERE uuid = $1::uuid', [y]);
        await persons().flush();
        expect(await pg.query('SELECT distinct_id FROM person_distinct_ids WHERE team_id = 1')).toEqual([]);
        expect(await pg.query('SELECT count(*)::int AS n FROM persons WHERE team_id = 1')).toEqual([{ n: 0 }]);
      });
    });

    test("a link made here to a person another process deleted meanwhile, flushed before its notice is read, leaves the id with the live person the other process linked it to", async () => {
      await apply(1, [ev('$pageview', 'dp', { set: { n: 1 } }), ev('$pageview', 'dq', { set: { n: 2 } })]);
      await persons().flush();
      const p = persons().findByDistinctId(1, 'dp')!.uuid;
      const q = persons().findByDistinctId(1, 'dq')!.uuid;
      // 'c' linked to dp's person here, pending; elsewhere 'c' was linked to dq's person and dp's
      // person deleted (a merge into dq's), their notices not read yet.
      persons().processEvent(1, ev('$identify', 'dp', { anonDistinctId: 'c' }));
      expect(persons().findByDistinctId(1, 'c')?.uuid).toBe(p);
      await atHome(async (pg) => {
        await pg.run("INSERT INTO person_distinct_ids (team_id, distinct_id, person_uuid) VALUES (1, 'c', $1::uuid)", [q]);
        await pg.run('UPDATE person_distinct_ids SET person_uuid = $1::uuid WHERE person_uuid = $2::uuid', [q, p]);
        await pg.run('DELETE FROM persons WHERE uuid = $1::uuid', [p]);
        await persons().flush();
        expect(await pg.query('SELECT distinct_id, person_uuid::text AS person_uuid FROM person_distinct_ids WHERE team_id = 1 ORDER BY distinct_id')).toEqual([
          { distinct_id: 'c', person_uuid: q },
          { distinct_id: 'dp', person_uuid: q },
          { distinct_id: 'dq', person_uuid: q },
        ]);
        expect(await pg.query('SELECT uuid::text AS uuid FROM persons WHERE team_id = 1')).toEqual([{ uuid: q }]);
      });
    });

    test("a link made here to a person whose delete in another process is under way waits for that delete and is not written (no id is left pointing at nobody)", async () => {
      // Identified already: linking 'c' below leaves p's row as it is, so the flush writes the link alone.
      await apply(1, [ev('$pageview', 'dp', { set: { n: 1 } }), ev('$identify', 'dp', { anonDistinctId: 'z' })]);
      await persons().flush();
      const p = persons().findByDistinctId(1, 'dp')!.uuid;
      persons().processEvent(1, ev('$identify', 'dp', { anonDistinctId: 'c' }));
      expect(persons().findByDistinctId(1, 'c')?.uuid).toBe(p);
      // Another process erases p: its transaction holds the person's row until it commits, and the
      // flush's link waits for it (without FOR KEY SHARE its snapshot would not see the delete at all).
      const flushed = await againstHeldLock(opened.metaStore!, ['DELETE FROM persons WHERE uuid = $1::uuid', [p]], () => persons().flush());
      expect(flushed.state).toBeNull();
      await atHome(async (pg) => {
        expect(
          await pg.query('SELECT d.distinct_id FROM person_distinct_ids d WHERE d.team_id = 1 AND NOT EXISTS (SELECT 1 FROM persons p WHERE p.uuid = d.person_uuid)'),
        ).toEqual([]);
        expect(await pg.query('SELECT distinct_id FROM person_distinct_ids WHERE team_id = 1')).toEqual([]);
      });
    });

    test("a flush PostgreSQL breaks off to end a deadlock with another process's transaction runs again and writes everything", async () => {
      await apply(1, [ev('$pageview', 'da', { set: { n: 1 } }), ev('$identify', 'db', { anonDistinctId: 'z' })]);
      await persons().flush();
      const a = persons().findByDistinctId(1, 'da')!.uuid;
      const b = persons().findByDistinctId(1, 'db')!.uuid;
      // The flush: a's row updated first, then a link to b, whose row it locks to share (b is
      // identified already, so its own row is not written).
      persons().processEvent(1, ev('$pageview', 'da', { set: { n: 2 } }));
      persons().processEvent(1, ev('$identify', 'db', { anonDistinctId: 'c' }));
      // Another process's transaction holds b, and once the flush waits for b asks for a.
      const flushed = await againstHeldLock(
        opened.metaStore!,
        ['SELECT 1 FROM persons WHERE uuid = $1::uuid FOR UPDATE', [b]],
        () => persons().flush(),
        [`UPDATE persons SET properties = '{"n": 9}' WHERE uuid = $1::uuid`, [a]],
      );
      expect(flushed.state).toBeNull();
      await atHome(async (pg) => {
        const rows = await pg.query<{ distinct_id: string; person_uuid: string; n: number | null }>(
          "SELECT d.distinct_id, d.person_uuid::text AS person_uuid, (p.properties->>'n')::int AS n FROM person_distinct_ids d JOIN persons p ON p.uuid = d.person_uuid WHERE d.team_id = 1 ORDER BY d.distinct_id",
        );
        expect(rows).toEqual([
          { distinct_id: 'c', person_uuid: b, n: null },
          { distinct_id: 'da', person_uuid: a, n: 2 },
          { distinct_id: 'db', person_uuid: b, n: null },
          { distinct_id: 'z', person_uuid: b, n: null },
        ]);
      });
    });

    test("another process's person changes reach this one's memory and its events-side copy", async () => {
      const other = await opened.another();
      try {
        await persons().ensureLoaded(1);
        await apply(1, [ev('e', 'kept', { set: { mine: true } })]);
        await persons().flush();
        const theirs = other.stores.persons;
        await theirs.ensureLoaded(1);
        const mirror = () => snapshot(persons(), 1).persons;
        const same = () => Bun.deepEquals(mirror(), snapshot(theirs, 1).persons);
        const settle = async () => {
          await theirs.flush();
          await eventually(() => same(), (ok) => ok);
          expect(mirror()).toEqual(snapshot(theirs, 1).persons);
          const expected = mirror()
            .map((p) => ({ uuid: p.uuid, properties: p.properties, ids: p.distinctIds }))
            .sort((a, b) => (a.uuid < b.uuid ? -1 : 1));
          // The copy is written right after memory.
          expect(await eventually(() => copied(1), (rows) => Bun.deepEquals(rows, expected))).toEqual(expected);
        };
        // New persons, a $set, a merge of two persons, then a deletion, each made by the other process.
        for (const e of [ev('$pageview', 'anon-x', { set: { plan: 'free' } }), ev('$pageview', 'user-x'), ev('$pageview', 'user-y', { set: { n: 1 } })]) theirs.processEvent(1, e);
        await settle();
        // A flush of many persons is announced in several notifications naming them: this process
        // patches them in and keeps the project loaded (without the names it would drop it).
        for (let i = 0; i < 600; i++) theirs.processEvent(1, ev('$pageview', `many-${i}`));
        await settle();
        expect(persons().isLoaded(1)).toBe(true);
        theirs.processEvent(1, ev('$set', 'anon-x', { set: { plan: 'pro' } }));
        await settle();
        expect(persons().findByDistinctId(1, 'anon-x')?.properties.plan).toBe('pro');
        theirs.processEvent(1, ev('$identify', 'user-x', { anonDistinctId: 'anon-x' }));
        await settle();
        expect(persons().findByDistinctId(1, 'anon-x')?.uuid).toBe(persons().findByDistinctId(1, 'user-x')?.uuid);
        // Deleted there while changed here and not flushed yet: the deletion wins, here and in the home.
        const y = persons().findByDistinctId(1, 'user-y')!.uuid;
        persons().setProperties(1, y, { late: true });
        await theirs.deletePerson(1, y);
        await eventually(() => persons().findByDistinctId(1, 'user-y'), (p) => p === null);
        expect(persons().findByDistinctId(1, 'user-y')).toBeNull();
        await persons().flush();
        const third = await opened.another();
        try {
          await third.stores.persons.ensureLoaded(1);
          expect(third.stores.persons.findByUuid(1, y)).toBeNull();
        } finally {
          await third.close();
        }
        expect(mirror()).toEqual(snapshot(theirs, 1).persons);
        expect(persons().findByDistinctId(1, 'kept')?.properties).toMatchObject({ mine: true });
      } finally {
        await other.close();
      }
    });

    test('two processes writing persons of different projects never hand out the same id', async () => {
      const other = await opened.another();
      try {
        await persons().ensureLoaded(1);
        await other.stores.persons.ensureLoaded(2);
        for (let i = 0; i < 200; i++) {
          persons().processEvent(1, ev('e', `a-${i}`));
          other.stores.persons.processEvent(2, ev('e', `b-${i}`));
        }
        await Promise.all([persons().flush(), other.stores.persons.flush()]);
        const ids = [...snapshot(persons(), 1).persons, ...snapshot(other.stores.persons, 2).persons].map((p) => p.id);
        expect(new Set(ids).size).toBe(400);
        // Each sees the other's persons once it loads that project.
        await persons().ensureLoaded(2);
        expect(snapshot(persons(), 2).persons.map((p) => p.id).sort()).toEqual(snapshot(other.stores.persons, 2).persons.map((p) => p.id).sort());
      } finally {
        await other.close();
      }
    });
  }
});
