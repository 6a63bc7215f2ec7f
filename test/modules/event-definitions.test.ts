import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { CreatedAccount, EventsSourceRelation } from '../../src/storage';
import { BASE, NOT_FOUND, createOtherAccount, createTestApp, errorOf, type TestApp } from '../helpers/test-app';
import { NO_KEYS } from '../../src/storage/seen/seen-tracker';

const DAY = 86_400_000;
const NOW = new Date('2024-03-01T12:00:00.000Z');
let clock = NOW;
let t: TestApp;
let other: CreatedAccount;
const URL = '/api/projects/@current/event_definitions/';
const ISO = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
const daysAgo = (days: number) => new Date(NOW.getTime() - days * DAY);

/** [event, days ago]: what the test's events relation serves (project 1 only). */
const EVENTS: Array<[string, number]> = [
  ['$pageview', 0.1],
  ['$pageview', 3],
  ['$pageview', 29],
  ['$pageview', 31],
  ['purchase', 1],
];

/** A relation the test fills itself: the events above as a VALUES list, every value bound. */
const eventsRelation = async (teamId: number): Promise<EventsSourceRelation> => ({
  sql: `(SELECT * FROM (VALUES ${EVENTS.map(() => '(?, ?, ?, CAST(? AS TIMESTAMP), CAST(? AS JSON))').join(', ')}) AS e(team_id, event, distinct_id, timestamp, properties))`,
  params: EVENTS.flatMap(([event, days]) => [t.account.project.id, event, 'u1', daysAgo(days).toISOString(), '{}']),
});

beforeAll(async () => {
  t = await createTestApp({}, () => clock);
  other = await createOtherAccount(t, 'definitions-other@example.com');
  const { seen } = t.deps.storage;
  // Definitions as ingestion records them: the name and when it was last seen.
  for (const [name, days] of [['$pageview', 0], ['purchase', 0.2], ['signup', 1], ['old event', 100]] as const) {
    seen.recordSummary(t.account.project.id, { events: [[name, daysAgo(days).getTime()]], properties: NO_KEYS, personProperties: NO_KEYS, eventProperties: [] });
  }
  seen.recordSummary(other.project.id, { events: [['theirs', NOW.getTime()]], properties: NO_KEYS, personProperties: NO_KEYS, eventProperties: [] });
  await seen.flush();
  t.deps.storage.eventsSource.current = eventsRelation;
});
afterAll(() => t.close());

const me = () => ({ id: t.account.user.id, uuid: t.account.user.uuid, distinct_id: t.account.user.distinctId, first_name: t.account.user.firstName, email: t.account.user.email });
const shape = (name: string, overrides: Record<string, unknown> = {}) => ({
  id: expect.stringMatching(/^[0-9a-f-]{36}$/),
  name,
  owner: null,
  description: null,
  tags: [],
  volume_30_day: 0,
  query_usage_30_day: 0,
  created_at: ISO,
  updated_at: null,
  updated_by: null,
  last_seen_at: ISO,
  last_updated_at: null,
  verified: false,
  verified_at: null,
  verified_by: null,
  // The spec's table types is_action as a string.
  is_action: 'false',
  action_id: null,
  is_calculating: false,
  last_calculated_at: null,
  created_by: null,
  post_to_chat: false,
  ...overrides,
});
const names = async (query: string) => ((await t.json('GET', `${URL}${query}`)).body.results as Array<{ name: string }>).map((d) => d.name);
const byName = async (name: string) => (await t.json('GET', `${URL}?search=${encodeURIComponent(name)}`)).body.results.find((d: { name: string }) => d.name === name);

describe('event definitions', () => {
  test('list: the envelope, most recently seen day first, then by name', async () => {
    const res = await t.json('GET', URL);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      count: 4,
      next: null,
      previous: null,
      results: [
        shape('$pageview', { volume_30_day: 3, last_seen_at: NOW.toISOString() }),
        shape('purchase', { volume_30_day: 1 }),
        shape('signup'),
        shape('old event'),
      ],
    });
    const page = await t.json('GET', `${URL}?limit=2&offset=1`);
    expect(page.body).toMatchObject({ count: 4, next: `${BASE}${URL}?limit=2&offset=3`, previous: `${BASE}${URL}?limit=2` });
    expect(page.body.results.map((d: { name: string }) => d.name)).toEqual(['purchase', 'signup']);
  });

  test.each([
    ['?search=PAGE', ['$pageview']],
    ['?search=ur%20se', ['purchase']],
    ['?search=u', ['signup', 'purchase']],
    ['?search=nothing', []],
    ['?event_type=event_custom', ['purchase', 'signup', 'old event']],
    ['?event_type=event_posthog', ['$pageview']],
    ['?ordering=name', ['$pageview', 'old event', 'purchase', 'signup']],
    ['?ordering=-name', ['signup', 'purchase', 'old event', '$pageview']],
    ['?ordering=-last_seen_at', ['$pageview', 'purchase', 'signup', 'old event']],
    ['?ordering=bogus', ['$pageview', 'purchase', 'signup', 'old event']],
  ])('%s', async (query, expected) => {
    expect(await names(query)).toEqual(expected);
  });

  test('retrieve by id; unknown and malformed ids are 404', async () => {
    const listed = await byName('purchase');
    const res = await t.json('GET', `${URL}${listed.id}/`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(listed);
    for (const id of [crypto.randomUUID(), 'nope']) expect((await t.json('GET', `${URL}${id}/`)).body).toEqual(NOT_FOUND);
  });

  test('PATCH sets owner, description, tags, verified and post_to_chat, and records who and when', async () => {
    const signup = await byName('signup');
    const body = { owner: t.account.user.id, description: 'Signed up', tags: [' Growth ', 'growth', 'KPI', ''], verified: true, post_to_chat: true, name: 'renamed' };
    const res = await t.json('PATCH', `${URL}${signup.id}/`, { body });
    expect(res.status).toBe(200);
    const stamped = { updated_at: NOW.toISOString(), updated_by: me(), last_updated_at: NOW.toISOString() };
    expect(res.body).toEqual({
      ...signup,
      ...stamped,
      owner: t.account.user.id,
      description: 'Signed up',
      tags: ['growth', 'kpi'],
      verified: true,
      verified_at: NOW.toISOString(),
      verified_by: me(),
      post_to_chat: true,
    });
    expect((await t.json('GET', `${URL}${signup.id}/`)).body).toEqual(res.body);

    clock = new Date(NOW.getTime() + DAY);
    const again = await t.json('PATCH', `${URL}${signup.id}/`, { body: { verified: true, owner: null } });
    expect(again.body).toEqual({ ...res.body, owner: null, updated_at: clock.toISOString(), last_updated_at: clock.toISOString() });
    const unverified = await t.json('PATCH', `${URL}${signup.id}/`, { body: { verified: false } });
    expect(unverified.body).toEqual({ ...again.body, verified: false, verified_at: null, verified_by: null });
    clock = NOW;
  });

  test.each([
    [{ owner: 999 }, 'Invalid pk "999" - object does not exist.', 'owner'],
    [{ verified: 'yes' }, expect.any(String), 'verified'],
    [{ tags: 'growth' }, expect.any(String), 'tags'],
  ])('a bad PATCH is a 400: %j', async (body, detail, attr) => {
    const purchase = await byName('purchase');
    const res = await t.json('PATCH', `${URL}${purchase.id}/`, { body });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(errorOf('invalid_input', 'validation_error', detail as string, attr));
  });

  test('query_usage_30_day counts the event queries of the last 30 days', async () => {
    const { definitions } = t.deps.storage;
    const team = t.account.project.id;
    await definitions.recordEventQueryUsage(team, ['purchase', '$pageview', 'purchase'], daysAgo(1));
    await definitions.recordEventQueryUsage(team, ['purchase'], daysAgo(2));
    await definitions.recordEventQueryUsage(team, ['purchase'], daysAgo(45));
    await definitions.recordEventQueryUsage(other.project.id, ['purchase'], daysAgo(1));
    expect((await byName('purchase')).query_usage_30_day).toBe(2);
    expect((await byName('$pageview')).query_usage_30_day).toBe(1);
  });

  test('volume_30_day is null when no events are available', async () => {
    t.deps.storage.eventsSource.current = undefined;
    expect((await byName('$pageview')).volume_30_day).toBeNull();
    t.deps.storage.eventsSource.current = eventsRelation;
    expect((await byName('$pageview')).volume_30_day).toBe(3);
  });

  test.each([
    ['POST', URL],
    ['DELETE', `${URL}00000000-0000-0000-0000-000000000000/`],
  ])('%s is a 405', async (method, path) => {
    const res = await t.json(method, path, { body: method === 'POST' ? { name: 'new' } : undefined });
    expect(res.status).toBe(405);
    expect(res.body).toEqual(errorOf('method_not_allowed', 'invalid_request', `Method "${method}" not allowed.`));
  });
});

describe('another organization', () => {
  test('sees only its own definitions and cannot reach these', async () => {
    const key = other.personalApiKey.value;
    const theirs = await t.json('GET', URL, { key });
    expect(theirs.body).toEqual({ count: 1, next: null, previous: null, results: [shape('theirs', { volume_30_day: 0 })] });
    const mine = await byName('purchase');
    const project = t.account.project.id;
    for (const [method, path, body] of [
      ['GET', `/api/projects/${project}/event_definitions/`],
      ['GET', `/api/projects/${project}/event_definitions/${mine.id}/`],
      ['PATCH', `/api/projects/${project}/event_definitions/${mine.id}/`, { description: 'stolen' }],
      ['DELETE', `/api/projects/${project}/event_definitions/${mine.id}/`],
      ['GET', `/api/projects/${other.project.id}/event_definitions/${mine.id}/`],
      ['PATCH', `/api/projects/${other.project.id}/event_definitions/${mine.id}/`, { description: 'stolen' }],
    ] as const) {
      const res = await t.json(method, path, { key, body });
      expect(res.status).toBe(404);
      expect(res.body).toEqual(NOT_FOUND);
    }
    expect((await byName('purchase')).description).toBeNull();
  });
});
