import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { uuidv7 } from '../../src/ids';
import type { CreatedAccount } from '../../src/storage';
import { NOT_AUTHENTICATED, NOT_FOUND, createOtherAccount, createTestApp, errorOf, reopenTestApp, type TestApp, type TestStoreOptions } from '../helpers/test-app';

/**
 * `DELETE /persons/:id/?delete_events=true`, the GDPR right to erasure: alice's events are spread
 * over every tier (Parquet files and their person-clustered copies, the hot table, and the log,
 * where loads are held back when the DELETE arrives), and afterwards nothing of hers can be read
 * back through any API, nor from the files, nor after a restart; bob's and carl's events (carl
 * has no person: NULL person ids) are all still there.
 */
const NOW = new Date('2024-03-10T12:00:00.000Z');
const DAY = 86_400_000;
const HOUR = 3_600_000;
const SECRET = 'alice-private-7f3e9c';
const URL = '/api/projects/@current/persons/';

let t: TestApp;
let other: CreatedAccount;
let stall: Promise<void> | null = null;
const store: TestStoreOptions = { purgeGraceMs: 0, hooks: { beforeLoad: () => stall ?? undefined } };

interface Sent {
  event: string;
  distinct_id: string;
  timestamp: string;
  uuid: string;
  properties: Record<string, unknown>;
}
const sent: Sent[] = [];
let n = 0;
const ev = (distinctId: string, daysAgo: number, properties: Record<string, unknown> = {}, event = '$pageview'): Sent => {
  const ms = NOW.getTime() - daysAgo * DAY + ++n * 1000;
  return { event, distinct_id: distinctId, timestamp: new Date(ms).toISOString(), uuid: uuidv7(ms), properties };
};
/** alice's events carry SECRET, so any copy of them is found wherever it is. */
const alice = (distinctId: string, daysAgo: number, extra: Record<string, unknown> = {}, event?: string) => ev(distinctId, daysAgo, { secret: SECRET, ...extra }, event);
const bob = (daysAgo: number, extra: Record<string, unknown> = {}) => ev('bob', daysAgo, { plan: 'pro', ...extra });
const carl = (daysAgo: number) => ev('carl', daysAgo, { $process_person_profile: false });

async function capture(events: Sent[]) {
  const res = await t.call('POST', '/batch/', { key: null, body: { api_key: t.account.project.apiToken, batch: events } });
  expect(res.status).toBe(200);
  sent.push(...events);
}

const teamId = () => t.account.project.id;
const person = (distinctId: string) => t.deps.storage.persons.findByDistinctId(teamId(), distinctId)!;
const kept = () => sent.filter((e) => e.distinct_id === 'bob' || e.distinct_id === 'carl');
let alicePerson: { id: number; uuid: string };
let staticCohort: number;
let dynamicCohort: number;

/** A flag on alice's email, one on cohort membership: both true for her before, false for anyone unknown. */
async function createFlags() {
  const flags = [
    { key: 'by-email', filters: { groups: [{ properties: [{ key: 'email', type: 'person', value: '@example.com', operator: 'icontains' }], rollout_percentage: 100 }] } },
    { key: 'by-cohort', filters: { groups: [{ properties: [{ key: 'id', type: 'cohort', value: staticCohort }], rollout_percentage: 100 }] } },
  ];
  for (const body of flags) expect((await t.json('POST', '/api/projects/@current/feature_flags/', { body })).status).toBe(201);
}
const decide = async (distinctId: string) => (await t.json('POST', '/decide/?v=3', { key: null, body: { token: t.account.project.apiToken, distinct_id: distinctId } })).body;

beforeAll(async () => {
  t = await createTestApp({}, () => NOW, undefined, store);
  other = await createOtherAccount(t, 'erasure-other@example.com');
  // Parquet: alice as two persons merged by $identify (the anonymous one's events keep its old
  // person id), bob, carl; compacted, merged per day, and copied by person.
  await capture([alice('alice', 5), alice('alice-anon', 5), bob(5), carl(5), alice('alice-anon', 4), bob(4)]);
  await capture([alice('alice', 4, { $anon_distinct_id: 'alice-anon', $set: { email: 'alice@example.com', plan: 'pro' } }, '$identify'), bob(4), carl(4), alice('alice', 3)]);
  await t.deps.storage.events.compact();
  expect(await t.deps.storage.events.buildPersonCopies()).toBeGreaterThanOrEqual(3);
  // Hot table.
  await capture([alice('alice', 2), bob(2), carl(2), alice('alice-anon', 2)]);
  await t.deps.storage.events.flush();
  const stats = t.deps.storage.events.stats();
  expect(stats.hotRows).toBe(4);
  expect(stats.parquetFiles).toBeGreaterThanOrEqual(3);
  alicePerson = { id: person('alice').id, uuid: person('alice').uuid };
  expect(person('alice-anon').uuid).toBe(alicePerson.uuid);
  // Cohorts with alice and bob: a static one, and one calculated from the `plan` property.
  const created = await t.json('POST', '/api/projects/@current/cohorts/', { body: { name: 'Picked', is_static: true, _create_static_person_ids: [alicePerson.uuid, person('bob').uuid] } });
  expect(created.status).toBe(201);
  staticCohort = created.body.id;
  t.deps.storage.persons.setProperties(teamId(), person('bob').uuid, { plan: 'pro' });
  dynamicCohort = (await t.json('POST', '/api/projects/@current/cohorts/', { body: { name: 'Pro', filters: { properties: { type: 'AND', values: [{ type: 'person', key: 'plan', value: 'pro' }] } } } })).body.id;
  await t.deps.storage.cohorts.whenIdle();
  await createFlags();
  await t.deps.storage.flags.addHashKeyOverrides(teamId(), alicePerson.uuid, { 'by-email': 'alice-anon' });
}, 30_000);
afterAll(() => t.close());

/** A cohort's stored count and its members' listing. */
const cohortMembers = async (id: number) => {
  const { body } = await t.json('GET', `/api/projects/@current/cohorts/${id}/persons/`);
  const cohort = (await t.json('GET', `/api/projects/@current/cohorts/${id}/`)).body;
  return { count: cohort.count, listed: body.count, names: (body.results as Array<{ distinct_ids: string[] }>).map((p) => p.distinct_ids) };
};

const events = (query: Record<string, string>) => t.json('GET', `/api/projects/@current/events/?${new URLSearchParams({ limit: '1000', after: '2024-01-01T00:00:00Z', ...query })}`);
const hogql = (query: string, values?: Record<string, unknown>) => t.json('POST', '/api/projects/@current/query/', { body: { query: { kind: 'HogQLQuery', query, values } } });
const counts = (events: Sent[]) =>
  Object.entries(Object.groupBy(events, (e) => e.distinct_id))
    .map(([id, es]) => [id, es!.length] as [string, number])
    .sort(([a], [b]) => (a < b ? -1 : 1));

/** Everything a reader could learn about alice, through every API that reads events or persons. */
async function readableOfAlice() {
  const all = await events({});
  const csv = await t.call('GET', `/api/projects/@current/events/?format=csv&limit=1000&after=2024-01-01T00:00:00Z`);
  return {
    byId: (await t.json('GET', `${URL}${alicePerson.id}/`)).status,
    byUuid: (await t.json('GET', `${URL}${alicePerson.uuid}/`)).status,
    persons: (await t.json('GET', URL)).body.results.map((p: { distinct_ids: string[] }) => p.distinct_ids),
    events: (all.body.results as Array<{ id: string }>).map((e) => e.id).sort(),
    byDistinctId: (await events({ distinct_id: 'alice' })).body.results.length + (await events({ distinct_id: 'alice-anon' })).body.results.length,
    byPersonId: (await events({ person_id: alicePerson.uuid })).body.results.length,
    csvMentions: (await csv.text()).split('\n').filter((line) => line.includes('alice') || line.includes(SECRET)).length,
    select: (await events({ select: JSON.stringify(['distinct_id', 'count()']), orderBy: JSON.stringify(['distinct_id']) })).body.results,
    hogql: (await hogql('SELECT distinct_id, count() FROM events GROUP BY distinct_id ORDER BY distinct_id')).body.results,
    hogqlByPerson: (await hogql('SELECT count() FROM events WHERE person_id = {p} OR properties.secret = {s}', { p: alicePerson.uuid, s: SECRET })).body.results,
    hogqlByEmail: (await hogql("SELECT count() FROM events WHERE person.properties.email = 'alice@example.com'")).body.results,
    values: (await t.json('GET', '/api/projects/@current/events/values/?key=secret')).body,
    staticCohort: await cohortMembers(staticCohort),
    dynamicCohort: await cohortMembers(dynamicCohort),
    flags: (await decide('alice')).featureFlags,
    flagsAnon: (await decide('alice-anon')).featureFlags,
    hashKeys: (await t.deps.storage.flags.hashKeyOverrides(teamId())).has(alicePerson.uuid),
  };
}

/** Alice's rows in any Parquet file on disk, registered or not. */
async function aliceRowsOnDisk(): Promise<number> {
  const glob = join(t.dataDir, 'events', '**', '*.parquet').replaceAll("'", "''");
  let total = 0;
  // Read while no file is deleted: a purge between the glob and the open fails the read.
  await t.deps.storage.events.holdFiles(async () => {
    for await (const rows of t.deps.storage.events.streamQuery(`SELECT count(*) AS n FROM read_parquet('${glob}', union_by_name = true) WHERE distinct_id IN ('alice', 'alice-anon') OR properties LIKE ?`, [`%${SECRET}%`])) {
      total += Number(rows[0]?.n ?? 0);
    }
  });
  return total;
}

/**
 * Files under DATA_DIR whose bytes contain SECRET: the log, Parquet files and copies (their
 * dictionaries keep short strings as they are), DuckDB's own WAL. Not the database file itself:
 * DuckDB frees the blocks of deleted rows without overwriting them (no API reads them; the
 * README says so).
 */
async function filesWithSecret(): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(t.dataDir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || (entry.parentPath === t.dataDir && entry.name === 'analytics.duckdb')) continue;
    const path = join(entry.parentPath, entry.name);
    if ((await readFile(path)).includes(SECRET)) found.push(path.slice(t.dataDir.length));
  }
  return found.sort();
}

const expectedAfter = () => ({
  byId: 404,
  byUuid: 404,
  persons: [['bob']],
  events: kept().map((e) => e.uuid).sort(),
  byDistinctId: 0,
  byPersonId: 0,
  csvMentions: 0,
  select: counts(kept()),
  hogql: counts(kept()),
  hogqlByPerson: [[0]],
  hogqlByEmail: [[0]],
  values: [],
  staticCohort: { count: 1, listed: 1, names: [['bob']] },
  dynamicCohort: { count: 1, listed: 1, names: [['bob']] },
  flags: STRANGER,
  flagsAnon: STRANGER,
  hashKeys: false,
});
const STRANGER = { 'by-email': false, 'by-cohort': false };

describe('DELETE /persons/:id/?delete_events=true', () => {
  test('alice is readable everywhere before', async () => {
    const before = await readableOfAlice();
    expect(before.byId).toBe(200);
    expect(before.events.length).toBe(sent.length);
    expect(before.hogqlByEmail).toEqual([[sent.filter((e) => e.distinct_id.startsWith('alice')).length]]);
    expect(before.staticCohort.count).toBe(2);
    expect(before.dynamicCohort.count).toBe(2);
    expect(before.flags).toEqual({ 'by-email': true, 'by-cohort': true });
    expect(before.hashKeys).toBe(true);
    expect(await decide('stranger')).toMatchObject({ featureFlags: STRANGER });
  });

  test('erases her from every tier, events still in the log included; the others keep all of theirs', async () => {
    // The log: loads are held back, so these are logged (the 200) and processed, not loaded.
    let release!: () => void;
    stall = new Promise<void>((resolve) => (release = resolve));
    await capture([alice('alice', 1), bob(1), carl(1)]);
    await t.deps.storage.events.awaitIntake(teamId(), null);
    expect(t.deps.storage.events.stats().bufferedRows).toBe(3);
    const deleting = t.call('DELETE', `${URL}${alicePerson.id}/?delete_events=true`);
    // It waits for the log: the loads go on once released.
    const early = await Promise.race([deleting.then(() => 'answered'), Bun.sleep(300).then(() => 'waiting')]);
    expect(early).toBe('waiting');
    stall = null;
    release();
    const res = await deleting;
    expect(res.status).toBe(202);
    expect(await res.text()).toBe('');
    expect(await readableOfAlice()).toEqual(expectedAfter());
    // The replaced files go after the grace period (0 here): nothing of hers is left on disk.
    for (let i = 0; i < 100 && (await aliceRowsOnDisk()) > 0; i++) await Bun.sleep(50);
    expect(await aliceRowsOnDisk()).toBe(0);
    const stats = t.deps.storage.events.stats();
    expect(stats.hotRows + stats.parquetRows).toBe(kept().length);
  }, 30_000);

  test('a second DELETE is a 404', async () => {
    expect(await t.json('DELETE', `${URL}${alicePerson.uuid}/?delete_events=true`)).toMatchObject({ status: 404, body: NOT_FOUND });
  });

  test('new events of her old distinct id make a new person; a restart brings nothing of hers back', async () => {
    const later = ev('alice', 0.5, { fresh: true });
    await capture([later]);
    const fresh = await t.json('GET', `${URL}?distinct_id=alice`);
    expect(fresh.body.results.map((p: { uuid: string; properties: unknown }) => p.uuid === alicePerson.uuid)).toEqual([false]);
    t = await reopenTestApp(t, {}, () => NOW, undefined, store);
    const after = await readableOfAlice();
    const newer = { ...expectedAfter(), persons: [['alice'], ['bob']], events: [...kept().map((e) => e.uuid), later.uuid].sort() };
    expect(after).toEqual({
      ...newer,
      byDistinctId: 1,
      csvMentions: 1,
      select: counts([...kept(), later]),
      hogql: counts([...kept(), later]),
    });
    expect(await aliceRowsOnDisk()).toBe(0); // the new person's event is in the hot table
    expect(await filesWithSecret()).toEqual([]);
  }, 30_000);
});

describe('DELETE /persons/:id/ without delete_events', () => {
  test('deletes the person and their distinct ids; their events stay', async () => {
    await capture([ev('dora', 3, { n: 1 }), ev('dora', 2, { $set: { plan: 'pro' } })]);
    const dora = (await t.json('GET', `${URL}?distinct_id=dora`)).body.results[0];
    await t.json('PATCH', `/api/projects/@current/cohorts/${staticCohort}/add_persons_to_static_cohort/`, { body: { person_ids: [dora.uuid] } });
    expect((await cohortMembers(staticCohort)).count).toBe(2);
    const res = await t.call('DELETE', `${URL}${dora.uuid}/?delete_events=false`);
    expect(res.status).toBe(202);
    expect((await t.json('GET', `${URL}${dora.id}/`)).status).toBe(404);
    expect(await cohortMembers(staticCohort)).toEqual({ count: 1, listed: 1, names: [['bob']] });
    const left = await events({ distinct_id: 'dora' });
    expect(left.body.results.map((e: { id: string; person: unknown }) => [e.id, e.person])).toEqual(
      sent.filter((e) => e.distinct_id === 'dora').reverse().map((e) => [e.uuid, null]),
    );
  });
});

describe('an erasure cut short', () => {
  test('is finished at the next start', async () => {
    const frank = [ev('frank', 3, { secret: SECRET }), ev('frank', 2, { secret: SECRET })];
    await capture(frank);
    await t.deps.storage.events.flush();
    const uuid = t.deps.storage.persons.findByDistinctId(teamId(), 'frank')!.uuid;
    const eventStore = t.deps.storage.events;
    const erase = eventStore.erasePersonEvents;
    eventStore.erasePersonEvents = () => Promise.reject(new Error('disk on fire'));
    try {
      expect(await t.json('DELETE', `${URL}${uuid}/?delete_events=1`)).toEqual({ status: 500, body: errorOf('error', 'server_error', 'A server error occurred.'), headers: expect.anything() });
    } finally {
      eventStore.erasePersonEvents = erase;
    }
    // The person went first; the events are still there until the restart finishes the job.
    expect((await t.json('GET', `${URL}${uuid}/`)).status).toBe(404);
    expect((await events({ distinct_id: 'frank' })).body.results.length).toBe(2);
    t = await reopenTestApp(t, {}, () => NOW, undefined, store);
    expect((await events({ distinct_id: 'frank' })).body.results).toEqual([]);
    expect(await filesWithSecret()).toEqual([]);
  }, 30_000);
});

describe('errors', () => {
  test.each([
    ['an unknown id', `${URL}999999/`, {}, 404, NOT_FOUND],
    ['an unknown uuid', `${URL}00000000-0000-4000-8000-000000000000/?delete_events=true`, {}, 404, NOT_FOUND],
    ['not an id', `${URL}bob/`, {}, 404, NOT_FOUND],
    ['no key', `${URL}1/`, { key: null }, 401, NOT_AUTHENTICATED],
    ['a bad delete_events', `${URL}1/?delete_events=maybe`, {}, 400, errorOf('invalid_input', 'validation_error', 'Must be a valid boolean.', 'delete_events')],
  ] as const)('%s', async (_, path, options, status, body) => {
    expect(await t.json('DELETE', path, options)).toMatchObject({ status, body });
  });

  test("another organization's person is a 404 and stays", async () => {
    const theirs = await t.call('POST', '/batch/', { key: null, body: { api_key: other.project.apiToken, batch: [ev('eve', 1)] } });
    expect(theirs.status).toBe(200);
    await t.deps.storage.events.awaitIntake(other.project.id, null);
    const eve = t.deps.storage.persons.findByDistinctId(other.project.id, 'eve')!;
    expect(await t.json('DELETE', `/api/projects/${other.project.id}/persons/${eve.uuid}/?delete_events`)).toMatchObject({ status: 404, body: NOT_FOUND });
    expect(await t.json('DELETE', `${URL}${eve.uuid}/?delete_events`)).toMatchObject({ status: 404, body: NOT_FOUND });
    expect(t.deps.storage.persons.findByDistinctId(other.project.id, 'eve')?.uuid).toBe(eve.uuid);
  });

  test('the OpenAPI document has the route, its query parameter and answers', async () => {
    const spec = (await t.json('GET', '/swagger/json')).body;
    const route = spec.paths['/api/projects/{project_id}/persons/{id}/'].delete;
    expect(route.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`).sort()).toEqual(['path:id', 'path:project_id', 'query:delete_events']);
    expect(Object.keys(route.responses).sort()).toEqual(['202', '400', '401', '404', '503']);
  });
});
