import { afterEach, describe, expect, test } from 'bun:test';
import { SQL } from 'bun';
import type { PersonEvent } from '../../src/core/ingest/person-updates';
import { openPg, type Pg } from '../../src/storage/postgres/client';
import { createPostgresSeenRows } from '../../src/storage/postgres/seen-rows';
import { createSeenTracker, type SeenSummary } from '../../src/storage/seen/seen-tracker';
import { personEvent } from '../helpers/person-event';
import { POSTGRES_SKIP_REASON, postgresAvailable } from '../helpers/postgres';
import { ENGINES, eventually, type Opened } from './contracts/engines';

/**
 * Two server processes on one PostgreSQL database: what one process still holds of a project
 * another has deleted (persons, distinct ids, groups, definitions not flushed yet) is not
 * written back by its next flush, which would leave rows of a project that no longer exists;
 * nor by a flush already under way when the deletion starts.
 */
const run = postgresAvailable ? describe : describe.skip;
const title = (s: string) => (postgresAvailable ? s : `${s} (skipped: ${POSTGRES_SKIP_REASON})`);

const TABLES = ['persons', 'person_distinct_ids', 'groups', 'event_definitions', 'property_definitions', 'event_properties'];
const T0 = Date.parse('2024-05-01T10:00:00Z');

let n = 0;
const ev = (distinctId: string, extra: Partial<PersonEvent> = {}) =>
  personEvent({ uuid: `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`, distinctId, timestamp: T0 + n, ...extra });

const summary = (event: string, at: number, properties: string[]): SeenSummary => ({
  events: [[event, at]],
  properties: { names: properties, types: properties.map(() => 'String' as const) },
  personProperties: { names: ['email'], types: ['String'] },
  eventProperties: [[event, properties]],
});

run(title('a project deleted by one process while another holds changes of it'), () => {
  let a: Opened | undefined;
  let b: Opened | undefined;
  let sql: SQL | undefined;
  let pg: Pg | undefined;
  afterEach(async () => {
    await pg?.close();
    await sql?.close();
    await b?.close();
    await a?.close();
    [a, b, sql, pg] = [undefined, undefined, undefined, undefined];
  });

  test("the other's flush writes nothing back for it, and still writes the projects that remain", async () => {
    const one = (a = await ENGINES.find((e) => e.name === 'postgres')!.open());
    const other = (b = await one.another());
    const tables = (sql = new SQL(one.metaStore!));
    const account = await one.stores.management.createAccount({ email: 'owner@example.com', organizationName: 'Org' });
    const kept = account.project.id;
    const doomed = (await one.stores.management.createProject(account.organization.id, 'Doomed', {})).id;

    // B holds changes of both projects, not flushed yet: persons, a merge, a group, definitions.
    const seen = createSeenTracker(other.stores.seenRows, other.stores.management);
    for (const teamId of [kept, doomed]) {
      // A project's first event is written at once; what follows waits for the next flush.
      seen.recordSummary(teamId, summary('signup', T0, ['plan']));
      await seen.flush();
      // The flush the new name asked for on its own (a timer) done too: nothing after this is written until asked.
      await Bun.sleep(5);
      await seen.flush();
      seen.recordSummary(teamId, summary('signup', T0 + 3_600_000, ['price']));
      await other.stores.persons.ensureLoaded(teamId);
      other.stores.persons.processEvent(teamId, ev('anon', { set: { plan: 'free' } }));
      other.stores.persons.processEvent(teamId, ev('user', { anonDistinctId: 'anon' }));
      other.stores.persons.processEvent(teamId, ev('user', { event: '$groupidentify', properties: { $group_type: 'company', $group_key: 'acme', $group_set: { size: 1 } } }));
    }
    expect(seen.pendingChanges()).toBeGreaterThan(0);
    expect(other.stores.persons.pendingChanges()).toBeGreaterThan(0);

    // A deletes the project as the server does: the project, then its definitions and persons.
    await one.stores.management.deleteProject(doomed);
    await one.stores.definitions.deleteTeam(doomed);
    await one.stores.persons.deleteTeam(doomed);

    await other.stores.persons.flush();
    await seen.flush();

    const rowsOf = async (teamId: number) =>
      Object.fromEntries(
        await Promise.all(TABLES.map(async (table) => [table, Number((await tables.unsafe(`SELECT count(*) AS n FROM ${table} WHERE team_id = $1`, [teamId]))[0].n)])),
      );
    expect(await rowsOf(doomed)).toEqual(Object.fromEntries(TABLES.map((t) => [t, 0])));
    expect(await rowsOf(kept)).toEqual({ persons: 1, person_distinct_ids: 2, groups: 1, event_definitions: 1, property_definitions: 3, event_properties: 2 });

    // What a process starting now reads of them.
    const c = await one.another();
    try {
      await c.stores.persons.ensureLoaded(doomed);
      await c.stores.persons.ensureLoaded(kept);
      expect(c.stores.persons.findByDistinctId(doomed, 'user')).toBeNull();
      expect(c.stores.persons.groupTypeMapping(doomed)).toEqual({});
      expect(c.stores.persons.findByDistinctId(kept, 'anon')?.properties).toMatchObject({ plan: 'free' });
      expect(await c.stores.definitions.eventNames(doomed)).toEqual([]);
      expect(await c.stores.definitions.propertyNames(doomed, 'event')).toEqual([]);
      expect(await c.stores.definitions.eventNames(kept)).toEqual(['signup']);
    } finally {
      await c.close();
    }
  }, 60_000);

  test('a deletion that starts while a flush holds the project waits for it, then removes what it wrote', async () => {
    const one = (a = await ENGINES.find((e) => e.name === 'postgres')!.open());
    const tables = (sql = new SQL(one.metaStore!));
    const account = await one.stores.management.createAccount({ email: 'owner@example.com', organizationName: 'Org' });
    const doomed = (await one.stores.management.createProject(account.organization.id, 'Doomed', {})).id;

    // A flush paused right after it found the project still there, before it writes.
    let found!: () => void;
    const isFound = new Promise<void>((resolve) => (found = resolve));
    let resume!: () => void;
    const resumed = new Promise<void>((resolve) => (resume = resolve));
    pg = await openPg(one.metaStore!);
    const client = pg;
    const paused: Pg = {
      ...client,
      transaction: (fn) =>
        client.transaction((tx) =>
          fn({
            run: (text, params) => tx.run(text, params),
            async query<T>(text: string, params?: readonly unknown[]) {
              const rows = await tx.query<T>(text, params);
              if (text.includes('FROM projects')) {
                found();
                await resumed;
              }
              return rows;
            },
          }),
        ),
    };
    const flush = createPostgresSeenRows(paused).write({ events: [{ teamId: doomed, name: 'late', lastSeen: T0 }], properties: [], pairs: [] }, new Date(T0));
    await isFound;

    // Deleted as the server does: the project, then its definitions.
    let deleted = false;
    const deletion = (async () => {
      await one.stores.management.deleteProject(doomed);
      await one.stores.definitions.deleteTeam(doomed);
      deleted = true;
    })();
    // Until the deletion waits for the flush's lock (or, without one, is done): then the flush goes on.
    const waiting = () => tables.unsafe(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
    await eventually(async () => deleted || Number((await waiting())[0].n) > 0, (settled) => settled);
    resume();
    await flush;
    await deletion;
    expect(Number((await tables.unsafe('SELECT count(*) AS n FROM event_definitions WHERE team_id = $1', [doomed]))[0].n)).toBe(0);
  }, 60_000);
});
