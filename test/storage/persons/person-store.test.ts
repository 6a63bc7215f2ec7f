import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyPersonOperations, emptyPersonState, lookupIn } from '../../../src/core/ingest/person-state';
import { planPersonUpdates, type PersonEvent } from '../../../src/core/ingest/person-updates';
import { openDatabase, type Database } from '../../../src/storage/db';
import { migrate } from '../../../src/storage/migrations';
import { createPersonStore } from '../../../src/storage/persons/person-store';
import { personEvent } from '../../helpers/person-event';

let dir: string;
let db: Database;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'persons-'));
  db = await openDatabase(join(dir, 'db.duckdb'));
  await migrate(db);
});
afterEach(async () => {
  await db.close();
  await rm(dir, { recursive: true, force: true });
});

let n = 0;
const ev = (event: string, distinctId: string, extra: Partial<PersonEvent> = {}): PersonEvent =>
  personEvent({ uuid: `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`, event, distinctId, timestamp: 1_700_000_000_000 + n, ...extra });

const SEQUENCE: PersonEvent[] = [
  ev('$pageview', 'anon-1', { set: { $browser: 'Chrome' }, setOnce: { $initial_browser: 'Chrome' } }),
  ev('$pageview', 'anon-2', { set: { plan: 'free' } }),
  ev('$identify', 'user-1', { anonDistinctId: 'anon-1', set: { email: 'u1@example.com' } }),
  ev('$create_alias', 'user-1', { alias: 'anon-2' }),
  ev('signup', 'user-2', { setOnce: { first_seen: 'a' } }),
  ev('signup', 'user-2', { setOnce: { first_seen: 'b' }, unset: ['nothing'] }),
  ev('$identify', 'user-2', { anonDistinctId: 'anonymous' }),
  ev('$groupidentify', 'user-2', { properties: { $group_type: 'company', $group_key: 'acme', $group_set: { size: 10 } } }),
  ev('$set', 'user-1', { unset: ['plan'] }),
];

/** The store's in-memory and stored results must equal the pure reducer's (the reference meaning). */
describe('person store', () => {
  test('matches the reference reducer in memory and after a flush and reload', async () => {
    const ids = ['p-1', 'p-2', 'p-3', 'p-4', 'p-5'];
    const store = createPersonStore(db);
    await store.ensureLoaded(1);
    let state = emptyPersonState();
    let i = 0;
    for (const e of SEQUENCE) {
      const ref = planPersonUpdates(e, lookupIn(state), () => ids[i]);
      state = applyPersonOperations(state, ref.operations);
      const uuid = `00000000-0000-4000-a000-00000000000${i}`;
      const plan = store.processEvent(1, e, uuid);
      if (ref.operations.some((o) => o.type === 'create_person')) {
        expect(plan.personId).toBe(uuid);
        // Map reference ids to the store's uuids for the comparison below.
        state = JSON.parse(JSON.stringify(state).replaceAll(`"${ids[i]}"`, `"${uuid}"`));
        i++;
      }
    }
    const snapshot = (s: typeof store) =>
      Object.fromEntries(
        Object.keys(state.distinctIds).map((d) => {
          const p = s.findByDistinctId(1, d)!;
          return [d, { uuid: p.uuid, properties: p.properties, isIdentified: p.isIdentified, ids: [...p.distinctIds].sort() }];
        }),
      );
    const expected = Object.fromEntries(
      Object.entries(state.distinctIds).map(([d, pid]) => {
        const p = state.persons[pid];
        return [d, { uuid: pid, properties: p.properties, isIdentified: p.isIdentified, ids: [...p.distinctIds].sort() }];
      }),
    );
    expect(snapshot(store)).toEqual(expected);
    expect(store.findByDistinctId(1, 'anon-1')!.uuid).toBe(store.findByDistinctId(1, 'user-1')!.uuid);
    expect(store.findByDistinctId(1, 'anon-2')!.uuid).toBe(store.findByDistinctId(1, 'user-1')!.uuid);
    expect(store.findByDistinctId(1, 'user-2')!.properties.first_seen).toBe('a');
    expect(store.findByDistinctId(1, 'anonymous')).toBeNull();

    await store.flush();
    expect(store.pendingChanges()).toBe(0);
    const reloaded = createPersonStore(db);
    await reloaded.ensureLoaded(1);
    expect(snapshot(reloaded)).toEqual(expected);
    expect(reloaded.groupTypeMapping(1)).toEqual({ company: 0 });
    expect(reloaded.findGroup(1, 'company', 'acme')).toEqual({ groupType: 'company', groupTypeIndex: 0, groupKey: 'acme', properties: { size: 10 } });
    const [{ n: persons }] = await db.query<{ n: number }>('SELECT count(*) AS n FROM persons WHERE team_id = 1');
    expect(persons).toBe(new Set(Object.values(state.distinctIds)).size);
    // Integer ids survive the rewrite of a changed person.
    expect(reloaded.findByDistinctId(1, 'user-1')!.id).toBe(store.findByDistinctId(1, 'user-1')!.id);
  });

  test('projects are separate, and deleting one removes only its persons', async () => {
    const store = createPersonStore(db);
    await store.ensureLoaded(1);
    await store.ensureLoaded(2);
    store.processEvent(1, ev('a', 'same-id', { set: { team: 1 } }));
    store.processEvent(2, ev('a', 'same-id', { set: { team: 2 } }));
    expect(store.findByDistinctId(1, 'same-id')!.properties).toEqual({ team: 1, $creator_event_uuid: expect.any(String) });
    expect(store.findByDistinctId(2, 'same-id')!.properties.team).toBe(2);
    await store.flush();
    for (const team of [1, 2]) {
      await db.run(`INSERT INTO person_erasures VALUES (?, uuid(), ['same-id'], true, now())`, [team]);
    }
    await store.deleteTeam(1);
    const [{ n }] = await db.query<{ n: number }>('SELECT count(*) AS n FROM persons');
    expect(n).toBe(1);
    // An erasure of the project cut short goes with it; the other project's stays.
    expect(await db.query('SELECT team_id FROM person_erasures')).toEqual([{ team_id: 2 }]);
    const fresh = createPersonStore(db);
    await fresh.ensureLoaded(2);
    expect(fresh.findByDistinctId(2, 'same-id')!.properties.team).toBe(2);
  });

  test('deleting a person removes them and every distinct id of theirs, a merge not yet written included; others stay', async () => {
    const store = createPersonStore(db);
    await store.ensureLoaded(1);
    store.processEvent(1, ev('$pageview', 'anon', { set: { a: 1 } }));
    store.processEvent(1, ev('$pageview', 'user', { set: { email: 'u@example.com' } }));
    store.processEvent(1, ev('$pageview', 'other'));
    await store.flush();
    // Merged in memory only: the tables still map `anon` to the person merged away.
    store.processEvent(1, ev('$identify', 'user', { anonDistinctId: 'anon' }));
    const user = store.findByDistinctId(1, 'user')!;
    expect([...user.distinctIds].sort()).toEqual(['anon', 'user']);
    expect((await store.deletePerson(1, user.uuid))?.uuid).toBe(user.uuid);
    expect([store.findByDistinctId(1, 'user'), store.findByDistinctId(1, 'anon'), store.findByUuid(1, user.uuid)]).toEqual([null, null, null]);
    const rows = async () => ({
      persons: (await db.query<{ n: number }>('SELECT count(*) AS n FROM persons'))[0]!.n,
      ids: (await db.query<{ d: string }>('SELECT distinct_id AS d FROM person_distinct_ids ORDER BY d')).map((r) => r.d),
    });
    expect(await rows()).toEqual({ persons: 1, ids: ['other'] });
    // A new event of a deleted distinct id makes a new person.
    store.processEvent(1, ev('$pageview', 'user'));
    expect(store.findByDistinctId(1, 'user')!.uuid).not.toBe(user.uuid);
    await store.flush();
    // Idempotent (a retry after a restart): the new person's distinct id is theirs to keep.
    const reloaded = createPersonStore(db);
    expect(await reloaded.deletePerson(1, user.uuid, ['user', 'anon'])).toBeNull();
    expect(await rows()).toEqual({ persons: 2, ids: ['other', 'user'] });
  });

  test('a failed flush keeps its changes for the next one', async () => {
    const store = createPersonStore(db);
    await store.ensureLoaded(1);
    store.processEvent(1, ev('a', 'x', { set: { v: 1 } }));
    await db.run('ALTER TABLE persons RENAME TO persons_gone');
    await expect(store.flush()).rejects.toThrow();
    expect(store.pendingChanges()).toBeGreaterThan(0);
    await db.run('ALTER TABLE persons_gone RENAME TO persons');
    await store.flush();
    const [{ n }] = await db.query<{ n: number }>('SELECT count(*) AS n FROM persons');
    expect(n).toBe(1);
  });
});

describe('person store: lone surrogates', () => {
  test('a property value or key holding one is flushed as U+FFFD (the flush failed on every try before), in memory as in the table', async () => {
    const store = createPersonStore(db);
    await store.ensureLoaded(1);
    store.processEvent(1, ev('$pageview', 'lone', { set: { nick: 'a\ud800b', ['k\udc00']: ['\udbff', 'ok'] } }), '00000000-0000-4000-a000-0000000000ff');
    await store.flush();
    expect(store.pendingChanges()).toBe(0);
    const expected = { nick: 'a\ufffdb', 'k\ufffd': ['\ufffd', 'ok'] };
    const { $creator_event_uuid, ...properties } = store.findByDistinctId(1, 'lone')!.properties;
    expect(properties).toEqual(expected);
    const reloaded = createPersonStore(db);
    await reloaded.ensureLoaded(1);
    expect(reloaded.findByDistinctId(1, 'lone')!.properties).toEqual({ $creator_event_uuid, ...expected });
  });

  test("a group's properties holding one are flushed as U+FFFD too", async () => {
    const store = createPersonStore(db);
    await store.ensureLoaded(1);
    store.processEvent(1, ev('$groupidentify', 'g-lone', { properties: { $group_type: 'company', $group_key: 'lone-co', $group_set: { name: 'a\ud800b' } } }), '00000000-0000-4000-a000-0000000000fe');
    await store.flush();
    expect(store.pendingChanges()).toBe(0);
    const rows = await db.query<{ properties: string }>("SELECT CAST(properties AS VARCHAR) AS properties FROM groups WHERE group_key = 'lone-co'");
    expect(rows.map((r) => JSON.parse(r.properties))).toEqual([{ name: 'a\ufffdb' }]);
  });
});
