import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createOtherAccount, createTestApp, type TestApp } from '../helpers/test-app';

/** Dynamic cohorts over persons and events that came in through real ingestion (POST /batch/). */
const NOW = new Date('2024-03-01T12:00:00.000Z');
const DAY = 86_400_000;
let t: TestApp;

const ago = (days: number) => new Date(NOW.getTime() - days * DAY).toISOString();

beforeAll(async () => {
  t = await createTestApp({}, () => NOW);
  const batch = [
    // alice: anonymous browsing, then identified with a plan; one pageview 2 days ago
    { event: '$pageview', distinct_id: 'anon-a', timestamp: ago(2), properties: { $current_url: 'https://x.test/' } },
    { event: '$identify', distinct_id: 'alice', timestamp: ago(2), properties: { $anon_distinct_id: 'anon-a' }, $set: { email: 'alice@example.com', plan: 'pro' } },
    // bob: pro too, but his only pageview is 20 days old
    { event: '$pageview', distinct_id: 'bob', timestamp: ago(20), properties: { $set: { email: 'bob@example.com', plan: 'pro' } } },
    // carol: free plan, active yesterday
    { event: '$pageview', distinct_id: 'carol', timestamp: ago(1), properties: { $set: { email: 'carol@example.com', plan: 'free' } } },
    // a later $set changes dave's plan: the newest value counts
    { event: 'signup', distinct_id: 'dave', timestamp: ago(3), properties: { $set: { plan: 'pro' } } },
    { event: 'downgrade', distinct_id: 'dave', timestamp: ago(1), properties: { $set: { plan: 'free' } } },
  ];
  const res = await t.call('POST', '/batch/', { key: null, body: { api_key: t.account.project.apiToken, batch } });
  expect(res.status).toBe(200);
});
afterAll(() => t.close());

async function cohortMembers(filters: Record<string, unknown>, key?: string) {
  const created = await t.json('POST', '/api/projects/@current/cohorts/', { body: { name: 'c', filters }, key });
  expect(created.status).toBe(201);
  await t.deps.storage.cohorts.whenIdle();
  const cohort = await t.json('GET', `/api/projects/@current/cohorts/${created.body.id}/`, { key });
  const persons = await t.json('GET', `/api/projects/@current/cohorts/${created.body.id}/persons/`, { key });
  return { count: cohort.body.count, errors: cohort.body.errors_calculating, names: persons.body.results.map((p: { name: string }) => p.name).sort(), persons: persons.body.results };
}

const and = (...values: Record<string, unknown>[]) => ({ properties: { type: 'AND', values } });
const PRO = { type: 'person', key: 'plan', operator: 'exact', value: 'pro' };
const PAGEVIEW_7D = { type: 'behavioral', value: 'performed_event', key: '$pageview', event_type: 'events', time_value: 7, time_interval: 'day' };

describe('cohorts over ingested persons and events', () => {
  test('a person-property cohort sees the merged, latest person properties', async () => {
    const got = await cohortMembers(and(PRO));
    expect(got).toMatchObject({ count: 2, errors: 0, names: ['alice@example.com', 'bob@example.com'] });
    const alice = got.persons.find((p: { name: string }) => p.name === 'alice@example.com');
    expect([...alice.distinct_ids].sort()).toEqual(['alice', 'anon-a']);
  });

  test('a behavioural cohort reads the stored events (through the merge of anonymous ids)', async () => {
    expect(await cohortMembers(and(PAGEVIEW_7D))).toMatchObject({ count: 2, errors: 0, names: ['alice@example.com', 'carol@example.com'] });
  });

  test('property and behaviour together', async () => {
    expect(await cohortMembers(and(PRO, PAGEVIEW_7D))).toMatchObject({ count: 1, names: ['alice@example.com'] });
  });

  test('another organization sees none of it', async () => {
    const other = await createOtherAccount(t, 'cohort-ingest-other@example.com');
    const got = await cohortMembers(and(PRO), other.personalApiKey.value);
    expect(got).toMatchObject({ count: 0, names: [] });
  });
});
