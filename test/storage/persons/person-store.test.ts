import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyPersonOperations, emptyPersonState, lookupIn } from '../../../src/core/ingest/person-state';
import { planPersonUpdates, type PersonEvent } from '../../../src/core/ingest/person-updates';
import { openDatabase, type Database } from '../../../src/storage/db';
import { migrate } from '../../../src/storage/migrations';
import { createPersonStore } from '../../../src/storage/persons/person-store';
import type { PersonHome, PersonMirror } from '../../../src/storage/persons/types';
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

/**
 * A mirror that does nothing, except that `step` (a load's seed, or a deletion's) stops until
 * `release`: `reached` resolves when it is called.
 */
function gatedMirror(step: 'seed' | 'deleteTeam') {
  let reach!: () => void;
  const reached = new Promise<void>((r) => (reach = r));
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const stop = async () => {
    reach();
    await gate;
  };
  const mirror: PersonMirror = {
    write: async () => undefined,
    erase: async () => undefined,
    deleteTeam: step === 'deleteTeam' ? stop : async () => undefined,
    seed: step === 'seed' ? stop : async () => undefined,
  };
  return { mirror, reached, release: () => release() };
}

describe('person store: a project deleted while it loads, or loaded while it is deleted', () => {
  test('the load ends first: the project is not put back in memory, nor its rows in the tables', async () => {
    const before = createPersonStore(db);
    await before.ensureLoaded(7);
    before.processEvent(7, ev('$pageview', 'loaded', { set: { n: 1 } }));
    await before.flush();
    // A load that stops at its last step (the mirror's seed) until released.
    const { mirror, reached, release } = gatedMirror('seed');
    const store = createPersonStore(db, undefined, mirror);
    const loading = store.ensureLoaded(7);
    await reached;
    const deleting = store.deleteTeam(7);
    release();
    await Promise.all([loading, deleting]);
    expect(store.isLoaded(7)).toBe(false);
    expect(await db.query('SELECT (SELECT count(*) FROM persons WHERE team_id = 7)::INTEGER AS persons, (SELECT count(*) FROM person_distinct_ids WHERE team_id = 7)::INTEGER AS ids')).toEqual([{ persons: 0, ids: 0 }]);
    await store.ensureLoaded(7);
    expect(store.findByDistinctId(7, 'loaded')).toBeNull();
  });

  test('a load asked for while the deletion runs waits for it: the deleted persons are not read back into memory', async () => {
    const before = createPersonStore(db);
    await before.ensureLoaded(7);
    before.processEvent(7, ev('$pageview', 'loaded', { set: { n: 1 } }));
    await before.flush();
    // The deletion stops at the mirror (before DuckDB's rows go) until released.
    const { mirror, reached, release } = gatedMirror('deleteTeam');
    const store = createPersonStore(db, undefined, mirror);
    await store.ensureLoaded(7);
    const deleting = store.deleteTeam(7);
    await reached;
    let loaded = false;
    const loading = store.ensureLoaded(7).then(() => (loaded = true));
    for (let i = 0; i < 20; i++) await Bun.sleep(1);
    expect(loaded).toBe(false);
    release();
    await Promise.all([deleting, loading]);
    expect(store.isLoaded(7)).toBe(true);
    expect(store.findByDistinctId(7, 'loaded')).toBeNull();
    expect(store.listPersons(7, () => true, { offset: 0, limit: 10 }).count).toBe(0);
  });
});

/**
 * A home that writes nothing, hands out id 2, and answers a notice's read with nothing (every
 * person named is gone); `onChange` gets the store's listener. A test adds its own `load`.
 */
const quietHome = (onChange: PersonHome['onChange']): Omit<PersonHome, 'load'> => ({
  write: async () => undefined,
  deleteTeam: async () => undefined,
  takeId: () => 2,
  needsIds: () => false,
  reserveIds: async () => undefined,
  onChange,
  loadSome: async () => ({ persons: [], distinctIds: [], groups: [] }),
});

describe('person store with a home: changes missed while a project loads', () => {
  test('the project the load read before them is dropped once it ends, and read again when next needed', async () => {
    let plan = 'free';
    let reads = 0;
    let reading!: () => void;
    let read = new Promise<void>((r) => (reading = r));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let listener!: (teamId: number | null, keys: { persons: string[]; distinctIds: string[] } | null) => void;
    const uuid = '01890000-0000-7000-8000-000000000001';
    const home: PersonHome = {
      async load(_teamId, into) {
        reads++;
        into.persons([{ id: 1, uuid, properties: { plan }, isIdentified: false, createdAt: 1_700_000_000_000 }]);
        into.distinctIds([{ distinctId: 'someone', personUuid: uuid }]);
        into.groups([]);
        reading();
        await gate;
      },
      ...quietHome((l) => (listener = l)),
    };
    const store = createPersonStore(db, home);
    const loading = store.ensureLoaded(1);
    await read;
    // Another process changes the person; the notice is lost (the listening connection dropped).
    plan = 'pro';
    listener(null, null);
    release();
    await loading;
    for (let i = 0; i < 100 && store.isLoaded(1); i++) await Bun.sleep(10);
    expect(store.isLoaded(1)).toBe(false);
    read = new Promise<void>((r) => (reading = r));
    await store.ensureLoaded(1);
    expect(reads).toBe(2);
    expect(store.findByDistinctId(1, 'someone')?.properties).toEqual({ plan: 'pro' });
  });
});

describe('person store with a home: changes missed while changes of the project wait', () => {
  test('the project is read again whole around them: others\' changes come in, this process\'s pending ones stay, and the copy follows', async () => {
    const uuid = (n: number) => `01890000-0000-7000-8000-00000000000${n}`;
    type Row = { id: number; uuid: string; properties: Record<string, unknown>; isIdentified: boolean; createdAt: number };
    const person = (n: number, properties: Record<string, unknown>): Row => ({ id: n, uuid: uuid(n), properties, isIdentified: false, createdAt: 1_700_000_000_000 + n });
    // What the home holds: persons 1–3, with one distinct id each.
    let persons = [person(1, { plan: 'free' }), person(2, { plan: 'free' }), person(3, { plan: 'free' })];
    let ids = [
      { distinctId: 'changed-elsewhere', personUuid: uuid(1) },
      { distinctId: 'deleted-elsewhere', personUuid: uuid(2) },
      { distinctId: 'changed-both', personUuid: uuid(3) },
    ];
    let listener!: (teamId: number | null, keys: { persons: string[]; distinctIds: string[] } | null) => void;
    let loads = 0;
    const home: PersonHome = {
      async load(_teamId, into) {
        loads++;
        into.persons(persons.map((p) => ({ ...p, properties: { ...p.properties } })));
        into.distinctIds(ids.map((d) => ({ ...d })));
        into.groups([]);
      },
      ...quietHome((l) => (listener = l)),
      // The flush this test never lets succeed: the changes stay pending.
      write: async () => {
        throw new Error('home unreachable');
      },
    };
    const store = createPersonStore(db, home);
    await store.ensureLoaded(1);
    // This process's own changes, not written yet: persons 2 and 3's plans, and a person it made.
    store.processEvent(1, ev('$set', 'changed-both', { set: { plan: 'mine' } }));
    store.processEvent(1, ev('$set', 'deleted-elsewhere', { set: { plan: 'mine too' } }));
    store.processEvent(1, ev('$pageview', 'made-here', { set: { plan: 'new' } }));
    expect(store.pendingChanges()).toBeGreaterThan(0);
    // Another process changes persons 1 and 3, deletes person 2, and makes person 4; the notices are lost.
    persons = [person(1, { plan: 'pro' }), person(3, { plan: 'theirs' }), person(4, { plan: 'trial' })];
    ids = [
      { distinctId: 'changed-elsewhere', personUuid: uuid(1) },
      { distinctId: 'changed-both', personUuid: uuid(3) },
      { distinctId: 'made-elsewhere', personUuid: uuid(4) },
    ];
    listener(null, null);
    for (let i = 0; i < 200 && loads < 2; i++) await Bun.sleep(5);
    // Its turn ends before a flush may start: a flush asked for now runs after it.
    await store.flush().catch(() => undefined);
    expect(loads).toBe(2);
    expect(store.isLoaded(1)).toBe(true);
    const plans = Object.fromEntries(['changed-elsewhere', 'deleted-elsewhere', 'changed-both', 'made-here', 'made-elsewhere'].map((d) => [d, store.findByDistinctId(1, d)?.properties.plan ?? null]));
    expect(plans).toEqual({ 'changed-elsewhere': 'pro', 'deleted-elsewhere': null, 'changed-both': 'mine', 'made-here': 'new', 'made-elsewhere': 'trial' });
    expect(store.findByUuid(1, uuid(2))).toBeNull();
    // DuckDB's copy holds what memory holds (the pending changes included: the copy is brought to memory).
    const copied = await db.query<{ distinct_id: string; plan: string }>(
      "SELECT d.distinct_id, json_extract_string(p.properties, '$.plan') AS plan FROM person_distinct_ids d JOIN persons p ON p.uuid = d.person_uuid WHERE d.team_id = 1 ORDER BY d.distinct_id",
    );
    expect(copied).toEqual([
      { distinct_id: 'changed-both', plan: 'mine' },
      { distinct_id: 'changed-elsewhere', plan: 'pro' },
      { distinct_id: 'made-elsewhere', plan: 'trial' },
      { distinct_id: 'made-here', plan: 'new' },
    ]);
  });
});

describe('person store with a home: a project read again whole that the home could not answer', () => {
  test('is read again once a flush succeeds', async () => {
    const uuid = '01890000-0000-7000-8000-000000000001';
    let plan = 'free';
    let listener!: (teamId: number | null, keys: { persons: string[]; distinctIds: string[] } | null) => void;
    let loads = 0;
    let down = false;
    let writable = false;
    const home: PersonHome = {
      async load(_teamId, into) {
        loads++;
        if (down) throw new Error('home unreachable');
        into.persons([{ id: 1, uuid, properties: { plan }, isIdentified: false, createdAt: 1_700_000_000_000 }]);
        into.distinctIds([{ distinctId: 'someone', personUuid: uuid }]);
        into.groups([]);
      },
      ...quietHome((l) => (listener = l)),
      write: async () => {
        if (!writable) throw new Error('home unreachable');
      },
    };
    const store = createPersonStore(db, home);
    await store.ensureLoaded(1);
    store.processEvent(1, ev('$pageview', 'made-here', { set: { n: 1 } }));
    // Another process changes the person; the notice is lost, and the home is down for the read.
    plan = 'pro';
    down = true;
    listener(null, null);
    for (let i = 0; i < 200 && loads < 2; i++) await Bun.sleep(5);
    await store.flush().catch(() => undefined);
    expect(loads).toBe(2);
    expect(store.findByDistinctId(1, 'someone')?.properties).toEqual({ plan: 'free' });
    // The home is back: the flush writes this process's changes, and the project is read again.
    down = false;
    writable = true;
    await store.flush();
    for (let i = 0; i < 200 && store.isLoaded(1); i++) await Bun.sleep(5);
    await store.ensureLoaded(1);
    expect(loads).toBe(3);
    expect(store.findByDistinctId(1, 'someone')?.properties).toEqual({ plan: 'pro' });
  });
});

/**
 * A home kept in memory: `write` applies the changes as PostgreSQL's does (a gate may stop it first), `load` streams
 * what it holds, a page of persons and then one of distinct ids, each after a turn of the event
 * loop (so events can be processed in between, as with PostgreSQL). With a `readGate`, a read
 * takes what it will deliver as it starts (a snapshot, as a PostgreSQL statement's), calls
 * `reading`, and waits for the gate before it delivers.
 */
function memoryHome(onChange: PersonHome['onChange'], options: { provisionalIds?: boolean } = {}) {
  const persons = new Map<string, { id: number; uuid: string; properties: Record<string, unknown>; isIdentified: boolean; createdAt: number }>();
  const ids = new Map<string, string>();
  const state = {
    loads: 0,
    writeGate: null as Promise<void> | null,
    writing: null as (() => void) | null,
    readGate: null as Promise<void> | null,
    reading: null as (() => void) | null,
  };
  let nextId = 100;
  // With `provisionalIds`, every id handed out is provisional (below 0), as PostgreSQL's home gives when its reserve runs out; `write` gives them real ones.
  let provisional = 0;
  const personRows = (wanted?: Set<string>) =>
    [...persons.values()].filter((p) => !wanted || wanted.has(p.uuid)).map((p) => ({ ...p, properties: { ...p.properties } }));
  const idRows = () => [...ids].map(([distinctId, personUuid]) => ({ distinctId, personUuid }));
  const someRows = (uuids: readonly string[], distinctIds: readonly string[]) => ({
    persons: personRows(new Set([...uuids, ...distinctIds.map((d) => ids.get(d)).filter((u): u is string => u !== undefined)])),
    distinctIds: distinctIds.flatMap((d) => (ids.has(d) ? [{ distinctId: d, personUuid: ids.get(d)! }] : [])),
    groups: [],
  });
  const snapshotThenGate = async <T>(take: () => T): Promise<T | null> => {
    if (!state.readGate) return null;
    const taken = take();
    state.reading?.();
    await state.readGate;
    return taken;
  };
  const home: PersonHome = {
    ...quietHome(onChange),
    takeId: () => (options.provisionalIds ? --provisional : nextId++),
    async load(_teamId, into) {
      state.loads++;
      const snapshot = await snapshotThenGate(() => ({ persons: personRows(), ids: idRows() }));
      await Bun.sleep(1);
      into.persons(snapshot?.persons ?? personRows());
      await Bun.sleep(1);
      into.distinctIds(snapshot?.ids ?? idRows());
      into.groups([]);
    },
    async loadSome(_teamId, uuids, distinctIds) {
      const snapshot = await snapshotThenGate(() => someRows(uuids, distinctIds));
      await Bun.sleep(1);
      return snapshot ?? someRows(uuids, distinctIds);
    },
    async write(changes) {
      state.writing?.();
      if (state.writeGate) await state.writeGate;
      for (const { uuid, person } of changes.persons) {
        if (person && person.id < 0) person.id = nextId++;
        if (person) persons.set(uuid, { id: person.id, uuid, properties: { ...person.properties }, isIdentified: person.isIdentified, createdAt: person.createdAt });
        else {
          // A person's distinct ids go with it (PostgreSQL's foreign key, schema version 260).
          persons.delete(uuid);
          for (const [distinctId, owner] of ids) if (owner === uuid) ids.delete(distinctId);
        }
      }
      // As PostgreSQL's home writes them (person-home.ts): a link to a person it holds is taken;
      // an unlink writes nothing (the rows of persons deleted went with them).
      for (const { distinctId, personUuid } of changes.distinctIds) if (personUuid && persons.has(personUuid)) ids.set(distinctId, personUuid);
    },
  };
  return { home, persons, ids, state };
}

describe('person store with a home: a project read again whole while events and erasures go on', () => {
  let listener!: (teamId: number | null, keys: { persons: string[]; distinctIds: string[] } | null) => void;
  const copiedIds = () =>
    db.query<{ distinct_id: string; person_uuid: string }>('SELECT distinct_id, person_uuid::VARCHAR AS person_uuid FROM person_distinct_ids WHERE team_id = 1 ORDER BY distinct_id');

  test('a person made here and merged away while the copy is brought to memory: the read ends, and the next flush puts the copy right', async () => {
    const { home, state } = memoryHome((l) => (listener = l));
    // DuckDB's writer, stopped once when armed, until released.
    let armed = false;
    let reach!: () => void;
    const reached = new Promise<void>((r) => (reach = r));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const gated: Database = {
      ...db,
      withWriter: async (fn) => {
        if (armed) {
          armed = false;
          reach();
          await gate;
        }
        return db.withWriter(fn);
      },
    };
    const store = createPersonStore(gated, home);
    await store.ensureLoaded(1);
    store.processEvent(1, ev('$pageview', 'b', { set: { plan: 'pro' } }));
    await store.flush();
    // Made here and not written yet (the home is stopped): DuckDB's copy lacks it.
    let stopped!: () => void;
    state.writeGate = new Promise<void>((r) => (stopped = r));
    store.processEvent(1, ev('$pageview', 'a', { set: { seen: true } }));
    const a = store.findByDistinctId(1, 'a')!.uuid;
    const b = store.findByDistinctId(1, 'b')!.uuid;
    armed = true;
    listener(null, null);
    await reached;
    // The copy's sync stopped at its first write, with the person of 'a' listed as missing: it is merged into 'b'.
    store.processEvent(1, ev('$identify', 'b', { anonDistinctId: 'a' }));
    release();
    stopped();
    state.writeGate = null;
    await store.flush();
    await store.flush();
    expect(state.loads).toBe(2);
    expect(store.findByDistinctId(1, 'a')?.uuid).toBe(b);
    expect(store.findByUuid(1, a)).toBeNull();
    expect(await copiedIds()).toEqual([
      { distinct_id: 'a', person_uuid: b },
      { distinct_id: 'b', person_uuid: b },
    ]);
    expect(await db.query<{ n: number }>('SELECT count(*)::INTEGER AS n FROM persons WHERE team_id = 1')).toEqual([{ n: 1 }]);
  });

  test('a project read again whole while a person made here waits for its first write: the copy gets the person from that write, with the id the home gave, never the provisional one', async () => {
    const { home, state, persons } = memoryHome((l) => (listener = l), { provisionalIds: true });
    const store = createPersonStore(db, home);
    await store.ensureLoaded(1);
    store.processEvent(1, ev('$pageview', 'kept', { set: { n: 1 } }));
    await store.flush();
    store.processEvent(1, ev('$pageview', 'newcomer', { set: { n: 2 } }));
    const made = store.findByDistinctId(1, 'newcomer')!;
    expect(made.id).toBeLessThan(0);
    listener(null, null);
    for (let i = 0; i < 200 && state.loads < 2; i++) await Bun.sleep(5);
    expect(state.loads).toBe(2);
    // The next flush starts once the reread (and its sync of the copy) is done; it is held as it reaches the home.
    let reached!: () => void;
    const writing = new Promise<void>((r) => (reached = r));
    let release!: () => void;
    state.writing = reached;
    state.writeGate = new Promise<void>((r) => (release = r));
    const flushed = store.flush();
    await writing;
    const copy = () => db.query<{ id: number; uuid: string }>('SELECT id::INTEGER AS id, uuid::VARCHAR AS uuid FROM persons WHERE team_id = 1 ORDER BY id');
    // The newcomer is not in the copy before its write (the reread's sync left it to the flush), nor any provisional id.
    expect((await copy()).map((r) => r.uuid)).toEqual([store.findByDistinctId(1, 'kept')!.uuid]);
    state.writing = null;
    state.writeGate = null;
    release();
    await flushed;
    const real = persons.get(made.uuid)!.id;
    expect(real).toBeGreaterThan(0);
    expect(store.findByDistinctId(1, 'newcomer')!.id).toBe(real);
    expect(await copy()).toEqual([...persons.values()].map((p) => ({ id: p.id, uuid: p.uuid })).sort((a, b) => a.id - b.id));
    expect(await copiedIds()).toEqual([
      { distinct_id: 'kept', person_uuid: store.findByDistinctId(1, 'kept')!.uuid },
      { distinct_id: 'newcomer', person_uuid: made.uuid },
    ]);
  });

  test('a notice whose read fails while changes of the project wait: the project is read again whole after the next flush', async () => {
    const { home, state, persons } = memoryHome((l) => (listener = l));
    const store = createPersonStore(db, home);
    await store.ensureLoaded(1);
    store.processEvent(1, ev('$pageview', 'someone', { set: { plan: 'free' } }));
    await store.flush();
    const uuid = store.findByDistinctId(1, 'someone')!.uuid;
    // Another process changes the person; this one has a change of the project waiting (the home is stopped).
    persons.get(uuid)!.properties = { plan: 'pro' };
    let resume!: () => void;
    state.writeGate = new Promise<void>((r) => (resume = r));
    store.processEvent(1, ev('$pageview', 'other', { set: { n: 1 } }));
    const failing = home.loadSome;
    home.loadSome = async () => {
      throw new Error('home unreachable');
    };
    listener(1, { persons: [uuid], distinctIds: [] });
    await Bun.sleep(20);
    home.loadSome = failing;
    expect(store.findByDistinctId(1, 'someone')?.properties.plan).toBe('free');
    state.writeGate = null;
    resume();
    await store.flush();
    // Nothing waits any more: the project is dropped, and read whole when next needed.
    for (let i = 0; i < 200 && store.isLoaded(1); i++) await Bun.sleep(5);
    await store.ensureLoaded(1);
    expect(state.loads).toBe(2);
    expect(store.findByDistinctId(1, 'someone')?.properties.plan).toBe('pro');
  });

});

describe('person store with a home: reads of the home that a deletion here, or another process, overtakes', () => {
  let listener!: (teamId: number | null, keys: { persons: string[]; distinctIds: string[] } | null) => void;
  const copiedIds = () =>
    db.query<{ distinct_id: string; person_uuid: string }>('SELECT distinct_id, person_uuid::VARCHAR AS person_uuid FROM person_distinct_ids WHERE team_id = 1 ORDER BY distinct_id');
  const copiedPersons = () => db.query<{ uuid: string }>('SELECT uuid::VARCHAR AS uuid FROM persons WHERE team_id = 1 ORDER BY uuid');

  /** A store over a memory home holding two persons ('erased' and 'kept'), and a deletion of the first stopped at the home's write. */
  async function deletionAtHome() {
    const made = memoryHome((l) => (listener = l));
    const store = createPersonStore(db, made.home);
    await store.ensureLoaded(1);
    store.processEvent(1, ev('$pageview', 'erased', { set: { email: 'e@example.com' } }));
    store.processEvent(1, ev('$pageview', 'kept', { set: { n: 1 } }));
    await store.flush();
    const erased = store.findByDistinctId(1, 'erased')!.uuid;
    let writing!: () => void;
    const atHome = new Promise<void>((r) => (writing = r));
    let release!: () => void;
    made.state.writing = () => writing();
    // Its two flushes write nothing: its own write of the deletion is the first to reach the home.
    made.state.writeGate = new Promise<void>((r) => (release = r));
    const deleting = store.deletePerson(1, erased);
    await atHome;
    const finish = async () => {
      made.state.writing = null;
      made.state.writeGate = null;
      release();
      await deleting;
    };
    return { ...made, store, erased, finish };
  }

  test.each([
    ['the whole project read again (changes missed)', false],
    ['a notice naming them', true],
  ])('a person being deleted here is not read back from the home before it has deleted them: %s', async (_, keyed) => {
    const { state, store, erased, finish } = await deletionAtHome();
    // A change of the project waits, and changes are missed: the project is read again whole.
    store.processEvent(1, ev('$set', 'kept', { set: { n: 2 } }));
    if (keyed) listener(1, { persons: [erased], distinctIds: ['erased'] });
    else listener(null, null);
    for (let i = 0; i < 200 && !keyed && state.loads < 2; i++) await Bun.sleep(5);
    await Bun.sleep(20);
    expect(state.loads).toBe(keyed ? 1 : 2);
    expect(store.findByDistinctId(1, 'erased')).toBeNull();
    expect(store.findByUuid(1, erased)).toBeNull();
    await finish();
    await store.flush();
    expect(store.findByDistinctId(1, 'erased')).toBeNull();
    expect(store.findByDistinctId(1, 'kept')?.properties.n).toBe(2);
    expect(await copiedIds()).toEqual([{ distinct_id: 'kept', person_uuid: store.findByDistinctId(1, 'kept')!.uuid }]);
  });

  test.each([
    ['the whole project read again (changes missed)', false],
    ['a notice naming them', true],
  ])('a read begun before the home deleted a person erased here, delivering after the erasure ended, does not bring them back: %s', async (_, keyed) => {
    const { state, store, erased, finish } = await deletionAtHome();
    // A change of the project waits, and a read of the home begins while the home still holds
    // the person: it takes them, and stops before delivering.
    store.processEvent(1, ev('$set', 'kept', { set: { n: 2 } }));
    let reading!: () => void;
    const readBegun = new Promise<void>((r) => (reading = r));
    let deliver!: () => void;
    state.reading = () => reading();
    state.readGate = new Promise<void>((r) => (deliver = r));
    if (keyed) listener(1, { persons: [erased], distinctIds: ['erased'] });
    else listener(null, null);
    await readBegun;
    await finish();
    state.reading = null;
    state.readGate = null;
    deliver();
    // The flush waits for the read's turn.
    await store.flush();
    expect(state.loads).toBe(keyed ? 1 : 2);
    expect(store.findByUuid(1, erased)).toBeNull();
    expect(store.findByDistinctId(1, 'erased')).toBeNull();
    const kept = store.findByDistinctId(1, 'kept')!;
    expect(kept.properties.n).toBe(2);
    expect(await copiedIds()).toEqual([{ distinct_id: 'kept', person_uuid: kept.uuid }]);
    expect(await copiedPersons()).toEqual([{ uuid: kept.uuid }]);
  });

  test('a project dropped and loaded again while a person of it is being erased here: the load does not read them back', async () => {
    const { state, store, erased, finish } = await deletionAtHome();
    // Changes missed, none of the project's waiting: it is dropped, and loaded again at once
    // (the home still holds the person).
    listener(null, null);
    for (let i = 0; i < 200 && store.isLoaded(1); i++) await Bun.sleep(5);
    expect(store.isLoaded(1)).toBe(false);
    await store.ensureLoaded(1);
    expect(state.loads).toBe(2);
    expect(store.findByUuid(1, erased)).toBeNull();
    expect(store.findByDistinctId(1, 'erased')).toBeNull();
    await finish();
    await store.flush();
    expect(store.findByUuid(1, erased)).toBeNull();
    const kept = store.findByDistinctId(1, 'kept')!;
    expect(await copiedIds()).toEqual([{ distinct_id: 'kept', person_uuid: kept.uuid }]);
    expect(await copiedPersons()).toEqual([{ uuid: kept.uuid }]);
  });

  /** A store over a memory home with the persons of 'a' (p) and 'b' (q) written, and 'c' linked to p here, not written yet. */
  async function pendingLinkToP() {
    const made = memoryHome((l) => (listener = l));
    const store = createPersonStore(db, made.home);
    await store.ensureLoaded(1);
    store.processEvent(1, ev('$pageview', 'a', { set: { x: 1 } }));
    store.processEvent(1, ev('$pageview', 'b', { set: { y: 1 } }));
    await store.flush();
    const p = store.findByDistinctId(1, 'a')!.uuid;
    const q = store.findByDistinctId(1, 'b')!.uuid;
    store.processEvent(1, ev('$identify', 'a', { anonDistinctId: 'c' }));
    expect(store.findByDistinctId(1, 'c')?.uuid).toBe(p);
    /** Until the person `uuid` is gone from memory (a notice or a reread has run). */
    const goneHere = async (uuid: string) => {
      for (let i = 0; i < 200 && store.findByUuid(1, uuid); i++) await Bun.sleep(5);
    };
    /** Another process merges p into q, 'c' with them; this one reads it (a notice naming them, or the whole project again). */
    const mergedElsewhere = async (keyed: boolean) => {
      made.persons.delete(p);
      made.ids.set('a', q);
      made.ids.set('c', q);
      if (keyed) listener(1, { persons: [p], distinctIds: ['a', 'c'] });
      else listener(null, null);
      await goneHere(p);
    };
    return { ...made, store, p, q, goneHere, mergedElsewhere };
  }

  test.each([
    ['the whole project read again (changes missed)', false],
    ['a notice naming them', true],
  ])("a distinct id linked here to a person another process then merges away takes the home's owner (written as unlinked, it undid the merge): %s", async (_, keyed) => {
    const { ids, store, p, q, mergedElsewhere } = await pendingLinkToP();
    await mergedElsewhere(keyed as boolean);
    await store.flush();
    expect(store.findByUuid(1, p)).toBeNull();
    expect([...ids].sort()).toEqual([
      ['a', q],
      ['b', q],
      ['c', q],
    ]);
    for (const d of ['a', 'b', 'c']) expect(store.findByDistinctId(1, d)?.uuid).toBe(q);
    expect(await copiedIds()).toEqual(['a', 'b', 'c'].map((d) => ({ distinct_id: d, person_uuid: q })));
    expect(await copiedPersons()).toEqual([{ uuid: q }]);
  });

  test.each([
    ['the whole project read again (changes missed)', false],
    ['a notice naming them', true],
  ])("that id, once with the home's owner, no longer waits to be written: a later change of it elsewhere is taken, not overwritten by the stale link: %s", async (_, keyed) => {
    const { persons, ids, store, mergedElsewhere } = await pendingLinkToP();
    await mergedElsewhere(keyed as boolean);
    // Another process then moves 'c' to a new person r, before this one flushes.
    const r = '00000000-0000-4000-8000-0000000000ee';
    persons.set(r, { id: 90, uuid: r, properties: { z: 1 }, isIdentified: true, createdAt: 1_700_000_000_000 });
    ids.set('c', r);
    listener(1, { persons: [r], distinctIds: ['c'] });
    for (let i = 0; i < 200 && store.findByDistinctId(1, 'c')?.uuid !== r; i++) await Bun.sleep(5);
    await store.flush();
    expect(store.findByDistinctId(1, 'c')?.uuid).toBe(r);
    expect(ids.get('c')).toBe(r);
  });

  test("a distinct id linked here to a person another process erases, which another process linked to a live person meanwhile: the erasure's notice (not naming the id) leaves it with that person, here as at the home", async () => {
    const { persons, ids, store, p, q, goneHere } = await pendingLinkToP();
    // Elsewhere 'c' is linked to q (its notice skipped here: 'c' waits to be written), and p is
    // erased, its notice naming them and 'a'.
    ids.set('c', q);
    persons.delete(p);
    ids.delete('a');
    listener(1, { persons: [p], distinctIds: ['a'] });
    await goneHere(p);
    await store.flush();
    expect(store.findByUuid(1, p)).toBeNull();
    expect(store.findByDistinctId(1, 'c')?.uuid).toBe(q);
    expect([...ids].sort()).toEqual([
      ['b', q],
      ['c', q],
    ]);
    expect(await copiedIds()).toEqual(['b', 'c'].map((d) => ({ distinct_id: d, person_uuid: q })));
  });

  test("a distinct id linked here to a person another process then deletes, which the notice does not name, is written unlinked: the home's row of it, pointing at the person merged away here, goes", async () => {
    const { home, persons, ids } = memoryHome((l) => (listener = l));
    const store = createPersonStore(db, home);
    await store.ensureLoaded(1);
    store.processEvent(1, ev('$pageview', 'a', { set: { x: 1 } }));
    store.processEvent(1, ev('$pageview', 'y', { set: { y: 1 } }));
    await store.flush();
    const p = store.findByDistinctId(1, 'a')!.uuid;
    // Here the person of 'y' is merged into the one of 'a', not written yet...
    store.processEvent(1, ev('$identify', 'a', { anonDistinctId: 'y' }));
    expect(store.findByDistinctId(1, 'y')?.uuid).toBe(p);
    // ...while another process deletes the person of 'a'; its notice names them and 'a' only.
    persons.delete(p);
    ids.delete('a');
    listener(1, { persons: [p], distinctIds: ['a'] });
    for (let i = 0; i < 200 && store.findByUuid(1, p); i++) await Bun.sleep(5);
    await store.flush();
    expect(store.findByUuid(1, p)).toBeNull();
    expect(store.findByDistinctId(1, 'y')).toBeNull();
    expect([...persons.keys()]).toEqual([]);
    expect([...ids]).toEqual([]);
    expect(await copiedIds()).toEqual([]);
    expect(await copiedPersons()).toEqual([]);
  });
});

describe('person store with a home: a person deleted elsewhere', () => {
  test('takes out of the copy the distinct ids linked to them here that the home never took', async () => {
    const uuid = '01890000-0000-7000-8000-000000000002';
    let listener!: (teamId: number | null, keys: { persons: string[]; distinctIds: string[] } | null) => void;
    const home: PersonHome = {
      async load(_teamId, into) {
        into.persons([{ id: 1, uuid, properties: {}, isIdentified: false, createdAt: 1_700_000_000_000 }]);
        into.distinctIds([{ distinctId: 'known', personUuid: uuid }]);
        into.groups([]);
      },
      // The home takes no link to a person it no longer holds (person-home.ts), and gone: neither
      // the person nor their ids.
      ...quietHome((l) => (listener = l)),
    };
    const store = createPersonStore(db, home);
    await store.ensureLoaded(1);
    store.processEvent(1, ev('$identify', 'later', { anonDistinctId: 'known' }));
    await store.flush();
    const ids = () => db.query<{ distinct_id: string }>('SELECT distinct_id FROM person_distinct_ids WHERE team_id = 1 ORDER BY distinct_id');
    expect(await ids()).toEqual([{ distinct_id: 'known' }, { distinct_id: 'later' }]);
    // The notice names the person and the ids the other process deleted, not the link made here.
    listener(1, { persons: [uuid], distinctIds: ['known'] });
    for (let i = 0; i < 100 && store.findByUuid(1, uuid); i++) await Bun.sleep(10);
    await store.flush();
    expect(store.findByDistinctId(1, 'later')).toBeNull();
    expect(await ids()).toEqual([]);
    expect(await db.query('SELECT count(*)::INTEGER AS n FROM persons WHERE team_id = 1')).toEqual([{ n: 0 }]);
  });
});

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

  test('flushes asked for while another is under way: none returns before the changes made since are written', async () => {
    const store = createPersonStore(db);
    await store.ensureLoaded(1);
    store.processEvent(1, ev('$pageview', 'early'));
    const under = store.flush();
    store.processEvent(1, ev('$pageview', 'late'));
    // Two callers wait: the first to go on takes the change, and the second, awaited here, must
    // still wait for it to be written.
    const first = store.flush();
    await store.flush();
    const ids = await db.query<{ distinct_id: string }>('SELECT distinct_id FROM person_distinct_ids ORDER BY distinct_id');
    expect(ids.map((r) => r.distinct_id)).toEqual(['early', 'late']);
    await Promise.all([under, first]);
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

describe('person store: what a flush writes', () => {
  const rows = () => db.query<{ rowid: number; uuid: string; properties: string; is_identified: boolean }>('SELECT rowid, uuid::VARCHAR AS uuid, properties, is_identified FROM persons ORDER BY uuid');
  const ids = () => db.query<{ distinct_id: string; person_uuid: string }>('SELECT distinct_id, person_uuid::VARCHAR AS person_uuid FROM person_distinct_ids ORDER BY distinct_id');

  test('a flush that changes some persons leaves the rows of the others untouched; those it changes are updated in place', async () => {
    const store = createPersonStore(db);
    await store.ensureLoaded(1);
    for (const d of ['a', 'b', 'c']) store.processEvent(1, ev('$pageview', d, { set: { name: d } }));
    await store.flush();
    // Stored as they would be after a restart, where deleting a row costs the most.
    await db.run('CHECKPOINT');
    const before = await rows();
    const b = store.findByDistinctId(1, 'b')!;
    store.setProperties(1, b.uuid, { plan: 'pro' });
    await store.flush();
    const after = await rows();
    expect(after.filter((r) => r.uuid !== b.uuid)).toEqual(before.filter((r) => r.uuid !== b.uuid));
    const changed = after.find((r) => r.uuid === b.uuid)!;
    expect({ rowid: changed.rowid, properties: JSON.parse(changed.properties) }).toEqual({
      rowid: before.find((r) => r.uuid === b.uuid)!.rowid,
      properties: { ...b.properties, plan: 'pro' },
    });
  });

  test('new, changed, merged-away and moved rows in one flush: the tables hold what memory holds, as a reload shows', async () => {
    const store = createPersonStore(db);
    await store.ensureLoaded(1);
    store.processEvent(1, ev('$pageview', 'anon', { set: { a: 1 } }));
    store.processEvent(1, ev('$pageview', 'user', { set: { u: 1 } }));
    await store.flush();
    store.processEvent(1, ev('$identify', 'user', { anonDistinctId: 'anon', set: { u: 2 } }));
    store.processEvent(1, ev('$pageview', 'new', { set: { n: 1 } }));
    await store.flush();
    const user = store.findByDistinctId(1, 'user')!;
    const fresh = store.findByDistinctId(1, 'new')!;
    expect((await rows()).map((r) => ({ uuid: r.uuid, properties: JSON.parse(r.properties), is_identified: r.is_identified }))).toEqual(
      [user, fresh].map((p) => ({ uuid: p.uuid, properties: p.properties, is_identified: p.isIdentified })).sort((x, y) => x.uuid.localeCompare(y.uuid)),
    );
    expect(await ids()).toEqual([
      { distinct_id: 'anon', person_uuid: user.uuid },
      { distinct_id: 'new', person_uuid: fresh.uuid },
      { distinct_id: 'user', person_uuid: user.uuid },
    ]);
  });

  test('a row the table holds under another id, or none for a person it should hold, is written as memory has it', async () => {
    const store = createPersonStore(db);
    await store.ensureLoaded(1);
    store.processEvent(1, ev('$pageview', 'kept'));
    store.processEvent(1, ev('$pageview', 'lost'));
    await store.flush();
    const kept = store.findByDistinctId(1, 'kept')!;
    const lost = store.findByDistinctId(1, 'lost')!;
    // Changed behind the store's back: one row under another id, one person's row gone.
    await db.run('UPDATE persons SET id = id + 1000 WHERE uuid = ?::UUID', [kept.uuid]);
    await db.run('DELETE FROM persons WHERE uuid = ?::UUID', [lost.uuid]);
    store.setProperties(1, kept.uuid, { v: 1 });
    store.setProperties(1, lost.uuid, { v: 2 });
    store.processEvent(1, ev('$identify', 'lost', { anonDistinctId: 'lost-anon' }));
    await store.flush();
    const stored = await db.query<{ id: number; uuid: string; properties: string }>('SELECT id, uuid::VARCHAR AS uuid, properties FROM persons ORDER BY id');
    expect(stored.map((r) => ({ id: r.id, uuid: r.uuid, properties: JSON.parse(r.properties) }))).toEqual(
      [kept, lost].map((p) => ({ id: p.id, uuid: p.uuid, properties: p.properties })).sort((x, y) => x.id - y.id),
    );
    expect(await ids()).toEqual([
      { distinct_id: 'kept', person_uuid: kept.uuid },
      { distinct_id: 'lost', person_uuid: lost.uuid },
      { distinct_id: 'lost-anon', person_uuid: lost.uuid },
    ]);
  });

  test('a statement failing mid-flush leaves both tables as they were and every change pending; the next flush writes them', async () => {
    const store = createPersonStore(db);
    await store.ensureLoaded(1);
    store.processEvent(1, ev('$pageview', 'old', { set: { v: 1 } }));
    await store.flush();
    await db.run('CHECKPOINT');
    const before = { persons: await rows(), ids: await ids() };
    const old = store.findByDistinctId(1, 'old')!;
    store.setProperties(1, old.uuid, { v: 2 });
    store.processEvent(1, ev('$pageview', 'other', { set: { w: 1 } }));
    // The persons are written first; the distinct ids' statement then fails.
    await db.run('ALTER TABLE person_distinct_ids RENAME TO person_distinct_ids_gone');
    await expect(store.flush()).rejects.toThrow();
    await db.run('ALTER TABLE person_distinct_ids_gone RENAME TO person_distinct_ids');
    expect({ persons: await rows(), ids: await ids() }).toEqual(before);
    expect(store.pendingChanges()).toBe(3);
    await store.flush();
    expect(store.pendingChanges()).toBe(0);
    const reloaded = createPersonStore(db);
    await reloaded.ensureLoaded(1);
    expect(reloaded.findByDistinctId(1, 'old')!.properties).toEqual({ ...old.properties, v: 2 });
    expect(reloaded.findByDistinctId(1, 'other')!.properties.w).toBe(1);
  });

  test('a distinct id holding a lone surrogate is written as U+FFFD, as before', async () => {
    const store = createPersonStore(db);
    await store.ensureLoaded(1);
    store.processEvent(1, ev('$pageview', 'x\ud800y'));
    await store.flush();
    expect(store.pendingChanges()).toBe(0);
    expect((await ids()).map((r) => r.distinct_id)).toEqual(['x\ufffdy']);
  });
});
