import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { CreatedAccount } from '../../src/storage';
import { BASE, NOT_FOUND, createOtherAccount, createTestApp, errorOf, type TestApp } from '../helpers/test-app';

const NOW = new Date('2024-03-01T00:00:00.000Z');
const DAY = 86_400_000;
let t: TestApp;
let other: CreatedAccount;
const URL = '/api/projects/@current/cohorts/';
const ISO = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

/** Events sent through /batch/ once the persons exist: [team, event, distinct id, days ago, properties]. */
const events: Array<[number, string, string, number, Record<string, unknown>]> = [];

/** The events above, captured as an SDK sends them (into whichever store the app keeps events in). */
async function capture(teamId: number, token: string) {
  const batch = events
    .filter(([team]) => team === teamId)
    .map(([, event, distinctId, daysAgo, properties]) => ({ event, distinct_id: distinctId, timestamp: new Date(NOW.getTime() - daysAgo * DAY).toISOString(), properties }));
  const res = await t.call('POST', '/batch/', { key: null, body: { api_key: token, batch } });
  expect(res.status).toBe(200);
}

/** Persons as ingestion makes them: an `$identify` through the person store, then a flush. */
async function identify(teamId: number, distinctId: string, set: Record<string, unknown>, anonDistinctId: string | null = null) {
  const { persons } = t.deps.storage;
  await persons.ensureLoaded(teamId);
  const event = { uuid: crypto.randomUUID(), event: '$identify', distinctId, properties: {}, timestamp: NOW.getTime() - DAY * 60 };
  const plan = persons.processEvent(teamId, { ...event, set, setOnce: {}, unset: [], anonDistinctId, alias: null, processPerson: true });
  await persons.flush();
  return persons.findByUuid(teamId, plan.personId!)!;
}

type Person = Awaited<ReturnType<typeof identify>>;
const people: Record<string, Person> = {};
const personBody = (p: Person, name: string) => ({
  id: p.id,
  uuid: p.uuid,
  name,
  distinct_ids: [...p.distinctIds].sort(),
  properties: p.properties,
  created_at: new Date(p.createdAt).toISOString(),
  is_identified: p.isIdentified,
});

beforeAll(async () => {
  t = await createTestApp({}, () => NOW);
  other = await createOtherAccount(t, 'cohorts-other@example.com');
  const team = t.account.project.id;
  people.alice = await identify(team, 'alice', { email: 'alice@example.com', plan: 'pro', age: 31 }, 'alice-anon');
  people.bob = await identify(team, 'bob', { email: 'bob@test.org', plan: 'free', age: 25 });
  people.carol = await identify(team, 'carol', { name: 'Carol, "C"', plan: 'pro', age: 40 });
  people.dave = await identify(team, 'dave', {});
  people.eve = await identify(other.project.id, 'eve', { plan: 'pro' });
  events.push([team, '$pageview', 'alice-anon', 1, {}], [team, '$pageview', 'bob', 10, {}], [team, 'purchase', 'carol', 2, { amount: 5 }]);
  events.push([other.project.id, '$pageview', 'eve', 1, {}]);
  await capture(team, t.account.project.apiToken);
  await capture(other.project.id, other.project.apiToken);
});
afterAll(() => t.close());

const me = () => ({ id: t.account.user.id, uuid: t.account.user.uuid, distinct_id: t.account.user.distinctId, first_name: t.account.user.firstName, email: t.account.user.email });
const cohortShape = (overrides: Record<string, unknown>) => ({
  id: expect.any(Number),
  name: null,
  description: '',
  groups: [],
  deleted: false,
  filters: { properties: {} },
  query: null,
  is_calculating: false,
  created_by: me(),
  created_at: NOW.toISOString(),
  last_calculation: null,
  errors_calculating: 0,
  count: null,
  is_static: false,
  ...overrides,
});
const filtersOf = (...values: Record<string, unknown>[]) => ({ properties: { type: 'AND', values } });
const PRO = filtersOf({ type: 'person', key: 'plan', operator: 'exact', value: 'pro' });

/** The cohort once its background calculation is done. */
async function settled(id: number, key?: string) {
  await t.deps.storage.cohorts.whenIdle();
  return (await t.json('GET', `${URL}${id}/`, { key })).body;
}
const memberNames = async (id: number) => ((await t.json('GET', `${URL}${id}/persons/`)).body.results as Array<{ name: string }>).map((p) => p.name).sort();

describe('dynamic cohorts', () => {
  test('create answers 201 while calculating; the calculation then fills count and last_calculation', async () => {
    const created = await t.json('POST', URL, { body: { name: 'Pro', description: 'Paying', filters: PRO } });
    expect(created.status).toBe(201);
    expect(created.body).toEqual(cohortShape({ name: 'Pro', description: 'Paying', filters: PRO, is_calculating: true }));
    expect(await settled(created.body.id)).toEqual({ ...created.body, is_calculating: false, count: 2, last_calculation: NOW.toISOString() });
    const persons = await t.json('GET', `${URL}${created.body.id}/persons/`);
    expect(persons.body).toEqual({
      count: 2,
      next: null,
      previous: null,
      results: [personBody(people.alice, 'alice@example.com'), personBody(people.carol, 'Carol, "C"')].sort((a, b) => a.id - b.id),
    });
    expect(await t.deps.storage.cohorts.cohortIdsForPerson(t.account.project.id, people.alice.uuid)).toEqual(new Set([created.body.id]));
  });

  test.each([
    ['OR of person properties', { properties: { type: 'OR', values: [{ type: 'person', key: 'age', operator: 'lt', value: 30 }, { type: 'person', key: 'name', operator: 'icontains', value: 'carol' }] } }, ['Carol, "C"', 'bob@test.org']],
    ['is_not_set', filtersOf({ type: 'person', key: 'plan', operator: 'is_not_set' }), ['dave']],
  ])('membership: %s', async (_, filters, expected) => {
    const created = await t.json('POST', URL, { body: { name: 'case', filters } });
    expect(created.status).toBe(201);
    expect((await settled(created.body.id)).count).toBe(expected.length);
    expect(await memberNames(created.body.id)).toEqual(expected);
  });

  test.each([
    ['performed $pageview in the last 7 days', filtersOf({ type: 'behavioral', value: 'performed_event', key: '$pageview', event_type: 'events', time_value: 7, time_interval: 'day' }), ['alice@example.com']],
    ['performed $pageview in the last 30 days', filtersOf({ type: 'behavioral', value: 'performed_event', key: '$pageview', event_type: 'events', time_value: 30, time_interval: 'day' }), ['alice@example.com', 'bob@test.org']],
    ['did not purchase this week', filtersOf({ type: 'behavioral', value: 'performed_event', key: 'purchase', time_value: 1, time_interval: 'week', negation: true }), ['alice@example.com', 'bob@test.org', 'dave']],
  ])('membership: %s', async (_, filters, expected) => {
    const created = await t.json('POST', URL, { body: { name: 'case', filters } });
    expect(created.status).toBe(201);
    expect((await settled(created.body.id)).count).toBe(expected.length);
    expect(await memberNames(created.body.id)).toEqual(expected);
  });

  // Its second group is an event (`event_id`): a cohort defined by events.
  test('legacy groups are accepted, stored in full and shown as filters', async () => {
    const groups = [{ properties: [{ key: 'email', value: 'bob@test.org', type: 'person' }] }, { event_id: 'purchase', days: 7 }];
    const created = await t.json('POST', URL, { body: { name: 'Legacy', groups } });
    expect(created.status).toBe(201);
    const stored = groups.map((g) => ({ properties: null, action_id: null, event_id: null, label: null, days: null, count: null, count_operator: null, start_date: null, end_date: null, ...g }));
    expect(created.body.groups).toEqual(stored);
    expect(created.body.filters).toEqual({ properties: { type: 'OR', values: [expect.objectContaining({ type: 'AND' }), expect.objectContaining({ type: 'AND' })] } });
    expect((await settled(created.body.id)).count).toBe(2);
    expect(await memberNames(created.body.id)).toEqual(['Carol, "C"', 'bob@test.org']);
  });

  test('a cohort of another cohort; unknown references and loops are refused', async () => {
    const base = (await t.json('POST', URL, { body: { name: 'base', filters: PRO } })).body;
    const ref = { type: 'cohort', key: 'id', value: base.id };
    const derived = (await t.json('POST', URL, { body: { name: 'derived', filters: filtersOf(ref, { type: 'person', key: 'age', operator: 'gt', value: 35 }) } })).body;
    expect((await settled(base.id)).count).toBe(2);
    await t.json('PATCH', `${URL}${derived.id}/`, { body: { description: 'recalculate now that base is done' } });
    expect((await settled(derived.id)).count).toBe(1);
    const loop = await t.json('PATCH', `${URL}${base.id}/`, { body: { filters: filtersOf({ type: 'cohort', key: 'id', value: derived.id }) } });
    expect(loop.status).toBe(400);
    expect(loop.body).toEqual(errorOf('invalid_input', 'validation_error', 'Cohorts cannot reference other cohorts in a loop.', 'filters'));
    const unknown = await t.json('POST', URL, { body: { filters: filtersOf({ type: 'cohort', key: 'id', value: 999999 }) } });
    expect(unknown.body).toEqual(errorOf('invalid_input', 'validation_error', 'Invalid Cohort ID in filter', 'filters'));
  });

  // The failing calculation it provokes is of a cohort defined by events.
  test('update recalculates; a failed calculation is counted and the next success resets it', async () => {
    const created = (await t.json('POST', URL, { body: { name: 'Changing', filters: PRO } })).body;
    await settled(created.id);
    const patched = await t.json('PATCH', `${URL}${created.id}/`, { body: { filters: filtersOf({ type: 'person', key: 'plan', operator: 'exact', value: 'free' }) } });
    expect(patched.status).toBe(200);
    expect(patched.body.is_calculating).toBe(true);
    expect(await settled(created.id)).toEqual({ ...patched.body, is_calculating: false, count: 1 });
    expect(await memberNames(created.id)).toEqual(['bob@test.org']);

    // The events cannot be read: the calculation fails (wherever the events are, a source that rejects is read first).
    const { eventsSource } = t.deps.storage;
    const source = eventsSource.current;
    eventsSource.current = () => Promise.reject(new Error('down'));
    const behavioural = filtersOf({ type: 'behavioral', value: 'performed_event', key: '$pageview', time_value: 30, time_interval: 'day' });
    await t.json('PATCH', `${URL}${created.id}/`, { body: { filters: behavioural } });
    expect(await settled(created.id)).toEqual({ ...patched.body, filters: behavioural, is_calculating: false, count: 1, errors_calculating: 1 });
    expect(await memberNames(created.id)).toEqual(['bob@test.org']);
    eventsSource.current = source;
    await t.json('PATCH', `${URL}${created.id}/`, { body: { name: 'Changed' } });
    expect(await settled(created.id)).toMatchObject({ name: 'Changed', count: 2, errors_calculating: 0, is_calculating: false });
  });

  test('updates in a burst: one calculation at a time, ending with the latest definition', async () => {
    const created = (await t.json('POST', URL, { body: { filters: PRO } })).body;
    for (const plan of ['free', 'pro', 'free']) {
      const res = await t.json('PATCH', `${URL}${created.id}/`, { body: { filters: filtersOf({ type: 'person', key: 'plan', operator: 'exact', value: plan }) } });
      expect(res.body.is_calculating).toBe(true);
    }
    expect(await settled(created.id)).toMatchObject({ is_calculating: false, count: 1, errors_calculating: 0 });
    expect(await memberNames(created.id)).toEqual(['bob@test.org']);
  });

  test.each([
    [{ filters: { groups: [] } }, "Must contain a 'properties' key with type and values", 'filters'],
    [{ filters: filtersOf({ type: 'person', key: 'x', operator: 'semver_gt', value: '1' }) }, 'Operator "semver_gt" is not supported in cohorts.', 'filters'],
    [{ groups: [{ action_id: 4 }] }, 'Cohort groups on actions are not supported.', 'groups'],
  ])('an invalid definition is a 400: %j', async (body, detail, attr) => {
    const res = await t.json('POST', URL, { body });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(errorOf('invalid_input', 'validation_error', detail, attr));
  });
});

describe('list, soft delete and the refused DELETE', () => {
  test('list shows live cohorts newest first; PATCH deleted hides one, retrieve still shows it', async () => {
    const first = await settled((await t.json('POST', URL, { body: { name: 'first' } })).body.id);
    const list = (await t.json('GET', URL)).body;
    expect(list.results[0]).toEqual(first);
    const ids = list.results.map((c: { id: number }) => c.id);
    expect(ids).toEqual([...ids].sort((a: number, b: number) => b - a));
    const deleted = await t.json('PATCH', `${URL}${first.id}/`, { body: { deleted: true } });
    expect(deleted.status).toBe(200);
    expect(deleted.body.deleted).toBe(true);
    const after = (await t.json('GET', URL)).body;
    expect(after.count).toBe(list.count - 1);
    expect(after.results.map((c: { id: number }) => c.id)).not.toContain(first.id);
    expect((await t.json('GET', `${URL}${first.id}/`)).body).toEqual(deleted.body);
    expect(await t.deps.storage.cohorts.cohortIdsForPerson(t.account.project.id, people.dave.uuid)).not.toContain(first.id);
    const page = await t.json('GET', `${URL}?limit=1&offset=1`);
    expect(page.body).toMatchObject({ count: after.count, next: `${BASE}${URL}?limit=1&offset=2`, previous: `${BASE}${URL}?limit=1` });
  });

  test.each(['1', '999999'])('DELETE of cohort %s is a 405', async (id) => {
    const res = await t.json('DELETE', `${URL}${id}/`);
    expect(res.status).toBe(405);
    expect(res.body).toEqual(errorOf('method_not_allowed', 'invalid_request', 'Method "DELETE" not allowed.'));
  });

  test.each(['999999', 'abc', '1.5'])('an unknown cohort %s is a 404', async (id) => {
    for (const path of [`${URL}${id}/`, `${URL}${id}/persons/`]) expect((await t.json('GET', path)).body).toEqual(NOT_FOUND);
  });
});

/** A multipart request, as a browser uploads a CSV. */
const upload = (method: string, path: string, fields: Record<string, string>, csv: string) => {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.set(k, v);
  form.set('csv', new File([csv], 'ids.csv', { type: 'text/csv' }));
  return t.app.handle(new Request(BASE + path, { method, body: form, headers: { authorization: `Bearer ${t.account.personalApiKey.value}` } }));
};

describe('static cohorts', () => {
  test('from a CSV of distinct ids (no header), then more from a CSV with a header', async () => {
    const res = await upload('POST', URL, { name: 'Uploaded', is_static: 'true' }, 'alice-anon\nbob\nnobody\n');
    expect(res.status).toBe(201);
    const body = (await res.json()) as { id: number };
    expect(body).toEqual(cohortShape({ name: 'Uploaded', is_static: true, count: 2, last_calculation: NOW.toISOString() }));
    expect(await memberNames(body.id)).toEqual(['alice@example.com', 'bob@test.org']);
    const more = await upload('PATCH', `${URL}${body.id}/`, {}, 'distinct_id\ndave\n');
    expect(((await more.json()) as { count: number }).count).toBe(3);
    expect(await settled(body.id)).toMatchObject({ is_calculating: false, count: 3 });
  });

  test('a bad CSV is a 400 on csv and creates nothing', async () => {
    const before = (await t.json('GET', URL)).body.count;
    const res = await upload('POST', URL, { name: 'Bad', is_static: 'true' }, 'a,b\n1,2\n');
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual(errorOf('invalid_input', 'validation_error', expect.stringMatching(/^Multi-column CSV/) as never, 'csv'));
    expect((await t.json('GET', URL)).body.count).toBe(before);
  });

  test('from person ids, with additions and removals', async () => {
    const created = await t.json('POST', URL, { body: { name: 'Picked', is_static: true, _create_static_person_ids: [people.carol.uuid, people.eve.uuid] } });
    expect(created.body).toEqual(cohortShape({ name: 'Picked', is_static: true, count: 1, last_calculation: NOW.toISOString() }));
    const path = `${URL}${created.body.id}/`;
    expect((await t.json('PATCH', `${path}add_persons_to_static_cohort/`, { body: { person_ids: [people.dave.uuid] } })).body).toEqual({ success: true });
    const none = await t.json('PATCH', `${path}add_persons_to_static_cohort/`, { body: { person_ids: [people.eve.uuid] } });
    expect(none.body).toEqual(errorOf('invalid_input', 'validation_error', 'No valid users to add to cohort', 'person_ids'));
    expect((await t.json('PATCH', `${path}remove_person_from_static_cohort/`, { body: { person_id: people.carol.uuid } })).body).toEqual({ success: true });
    expect((await t.json('PATCH', `${path}remove_person_from_static_cohort/`, { body: { person_id: people.carol.uuid } })).status).toBe(404);
    expect(await memberNames(created.body.id)).toEqual(['dave']);
    expect((await t.json('GET', path)).body.count).toBe(1);
    const dynamic = (await t.json('POST', URL, { body: { filters: PRO } })).body;
    const refused = await t.json('PATCH', `${URL}${dynamic.id}/add_persons_to_static_cohort/`, { body: { person_ids: [people.dave.uuid] } });
    expect(refused.body).toEqual(errorOf('invalid_input', 'validation_error', 'Can only add users to static cohorts', null));
  });
});

describe('cohort persons', () => {
  test('pages keep the envelope links, and format=csv streams a flattened CSV', async () => {
    const res = await upload('POST', URL, { name: 'Export', is_static: 'true' }, 'alice\ncarol\ndave\n');
    const { id } = (await res.json()) as { id: number };
    const page = await t.json('GET', `${URL}${id}/persons/?limit=1&offset=1`);
    expect(page.body).toEqual({
      count: 3,
      next: `${BASE}${URL}${id}/persons/?limit=1&offset=2`,
      previous: `${BASE}${URL}${id}/persons/?limit=1`,
      results: [personBody(people.carol, 'Carol, "C"')],
    });
    const csv = await t.call('GET', `${URL}${id}/persons/?format=csv`);
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(csv.headers.get('content-disposition')).toBe(`attachment; filename="cohort-${id}-persons.csv"`);
    const created = (p: Person) => new Date(p.createdAt).toISOString();
    const creator = (p: Person) => p.properties.$creator_event_uuid;
    expect(await csv.text()).toBe(
      [
        'id,email,name,created_at,properties.$creator_event_uuid,properties.age,properties.name,properties.plan,distinct_ids.0,distinct_ids.1',
        `${people.alice.id},alice@example.com,alice@example.com,${created(people.alice)},${creator(people.alice)},31,,pro,alice,alice-anon`,
        `${people.carol.id},,"Carol, ""C""",${created(people.carol)},${creator(people.carol)},40,"Carol, ""C""",pro,carol,`,
        `${people.dave.id},,dave,${created(people.dave)},${creator(people.dave)},,,,dave,`,
        '',
      ].join('\r\n'),
    );
  });
});

describe('another organization', () => {
  test('sees none of the cohorts and cannot reach them', async () => {
    const key = other.personalApiKey.value;
    expect((await t.json('GET', URL, { key })).body).toEqual({ count: 0, next: null, previous: null, results: [] });
    const mine = (await t.json('GET', URL)).body.results[0];
    const project = t.account.project.id;
    for (const [method, path, body] of [
      ['GET', `/api/projects/${project}/cohorts/`],
      ['POST', `/api/projects/${project}/cohorts/`, { name: 'x' }],
      ['GET', `/api/projects/${project}/cohorts/${mine.id}/`],
      ['PATCH', `/api/projects/${project}/cohorts/${mine.id}/`, { deleted: true }],
      ['DELETE', `/api/projects/${project}/cohorts/${mine.id}/`],
      ['GET', `/api/projects/${project}/cohorts/${mine.id}/persons/`],
      ['GET', `/api/projects/${other.project.id}/cohorts/${mine.id}/`],
      ['GET', `/api/projects/${other.project.id}/cohorts/${mine.id}/persons/?format=csv`],
    ] as const) {
      const res = await t.json(method, path, { key, body });
      expect(res.status).toBe(404);
      expect(res.body).toEqual(NOT_FOUND);
    }
    expect((await t.json('GET', `${URL}${mine.id}/`)).body.deleted).toBe(false);
  });

  test('its own cohorts count only its own persons', async () => {
    const key = other.personalApiKey.value;
    const created = await t.json('POST', URL, { key, body: { filters: PRO } });
    expect((await settled(created.body.id, key)).count).toBe(1);
    const persons = await t.json('GET', `${URL}${created.body.id}/persons/`, { key });
    expect(persons.body.results.map((p: { uuid: string }) => p.uuid)).toEqual([people.eve.uuid]);
  });
});
