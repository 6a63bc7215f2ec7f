import { afterEach, describe, expect, test } from 'bun:test';
import { rm } from 'node:fs/promises';
import { CLICKHOUSE_SKIP_REASON, clickhouseServerAvailable, clickhouseServerUrl } from '../helpers/clickhouse';
import { createTestDatabase, POSTGRES_SKIP_REASON, postgresAvailable } from '../helpers/postgres';
import { newDataDir, startServer, TEST_KEYS, type ServerProcess } from '../helpers/server-process';

/**
 * With both stores set (EVENTS_STORE on the run's ClickHouse 18.16 server, META_STORE in
 * PostgreSQL), DATA_DIR holds nothing that matters: a server started on an empty data directory
 * against the same databases answers what the first one answered, body for body.
 */
const available = postgresAvailable && clickhouseServerAvailable;
const reason = [postgresAvailable ? null : POSTGRES_SKIP_REASON, clickhouseServerAvailable ? null : CLICKHOUSE_SKIP_REASON].filter(Boolean).join('; ');
const run = available ? describe : describe.skip;

type Json = any;
const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

/** A key's `last_used_at` moves with every request it authenticates: the rest of its body must not. */
const stable = (r: { status: number; body: Json }) =>
  Array.isArray(r.body) ? { ...r, body: r.body.map((k: Json) => ({ ...k, last_used_at: k.last_used_at === null ? null : expect.any(String) })) } : r;

async function call(server: ServerProcess, method: string, path: string, key: string | null, body?: unknown): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${server.url}${path}`, { method, headers: key ? headers(key) : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** Ask until `holds` (events are queryable a moment after their 200), at most 15 s. */
async function eventually<T>(ask: () => Promise<T>, holds: (value: T) => boolean): Promise<T> {
  const until = Date.now() + 15_000;
  for (;;) {
    const value = await ask();
    if (holds(value) || Date.now() > until) return value;
    await Bun.sleep(100);
  }
}

const NOW = Date.now();
const uuid = (n: number) => `01a219da-5fd6-7749-8000-${String(n).padStart(12, '0')}`;
const at = (minutesAgo: number) => new Date(NOW - minutesAgo * 60_000).toISOString();
const BATCH = [
  { event: '$identify', distinct_id: 'alice', uuid: uuid(1), timestamp: at(30), properties: { $set: { plan: 'pro', email: 'alice@example.com' } } },
  { event: '$pageview', distinct_id: 'alice', uuid: uuid(2), timestamp: at(20), properties: { $current_url: 'https://example.com/a' } },
  { event: '$identify', distinct_id: 'bob', uuid: uuid(3), timestamp: at(15), properties: { $set: { plan: 'free' } } },
  { event: '$pageview', distinct_id: 'bob', uuid: uuid(4), timestamp: at(10), properties: { $current_url: 'https://example.com/b' } },
  { event: 'purchase', distinct_id: 'alice', uuid: uuid(5), timestamp: at(5), properties: { price: 10 } },
];

/** What the second server must answer as the first did: paths read with the personal key. */
const READS = (projectId: number, cohortId: number) => [
  '/api/projects/',
  `/api/projects/${projectId}/`,
  '/api/personal_api_keys/',
  `/api/projects/${projectId}/events/`,
  `/api/projects/${projectId}/events/?properties=${encodeURIComponent(JSON.stringify([{ key: 'plan', value: 'pro', type: 'person' }]))}`,
  `/api/projects/${projectId}/feature_flags/`,
  `/api/projects/${projectId}/cohorts/${cohortId}/persons/`,
  `/api/projects/${projectId}/event_definitions/`,
];

run(`a server on an empty DATA_DIR against the same ClickHouse and PostgreSQL databases${available ? '' : ` (skipped: ${reason})`}`, () => {
  const servers: ServerProcess[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      if (s.proc.exitCode === null) await s.stop();
      await rm(s.dataDir, { recursive: true, force: true });
    }
  });

  test('serves the same projects, keys, events, flags (person properties, a static cohort) and cohort members', async () => {
    const env = { META_STORE: await createTestDatabase(), EVENTS_STORE: await clickhouseServerUrl() };
    const first = await startServer(env);
    servers.push(first);
    const key = (await call(first, 'POST', '/api/personal_api_keys/', TEST_KEYS.personal, { label: 'kept' })).body.value as string;
    const project = (await call(first, 'GET', '/api/projects/@current/', key)).body;
    expect((await call(first, 'POST', '/batch/', null, { api_key: TEST_KEYS.project, batch: BATCH })).status).toBe(200);
    const events = await eventually(() => call(first, 'GET', `/api/projects/${project.id}/events/`, key), (r) => r.body.results?.length === BATCH.length);
    expect(events.body.results.map((e: Json) => e.id)).toEqual(BATCH.map((e) => e.uuid).reverse());

    const persons = (await call(first, 'GET', `/api/projects/${project.id}/persons/?distinct_id=alice`, key)).body.results;
    const cohort = (await call(first, 'POST', `/api/projects/${project.id}/cohorts/`, key, { name: 'Uploaded', is_static: true })).body;
    expect((await call(first, 'PATCH', `/api/projects/${project.id}/cohorts/${cohort.id}/add_persons_to_static_cohort/`, key, { person_ids: [persons[0].uuid] })).status).toBe(200);
    const flags = [
      { key: 'pro-only', filters: { groups: [{ properties: [{ key: 'plan', value: 'pro', type: 'person', operator: 'exact' }], rollout_percentage: 100 }] } },
      { key: 'uploaded', filters: { groups: [{ properties: [{ key: 'id', value: cohort.id, type: 'cohort' }], rollout_percentage: 100 }] } },
    ];
    for (const flag of flags) expect((await call(first, 'POST', `/api/projects/${project.id}/feature_flags/`, key, flag)).status).toBe(201);
    const decide = (server: ServerProcess, distinctId: string) => call(server, 'POST', '/decide/?v=3', null, { token: TEST_KEYS.project, distinct_id: distinctId });
    const answers = async (server: ServerProcess) => [(await decide(server, 'alice')).body.featureFlags, (await decide(server, 'bob')).body.featureFlags];
    expect(await answers(first)).toEqual([{ 'pro-only': true, uploaded: true }, { 'pro-only': false, uploaded: false }]);

    const reads = READS(project.id, cohort.id);
    const before = await Promise.all(reads.map((path) => call(first, 'GET', path, key)));
    expect(before.map((r) => r.status)).toEqual(reads.map(() => 200));
    expect(before[6].body.results.map((p: Json) => p.distinct_ids)).toEqual([['alice']]);
    const definitions = Object.fromEntries(before[7].body.results.map((d: Json) => [d.name, d.volume_30_day]));
    expect(definitions).toEqual({ $identify: 2, $pageview: 2, purchase: 1 });
    expect(await first.stop()).toBe(0);

    // Another server, another (empty) data directory, no bootstrap: nothing it needs is there.
    const second = await startServer({ ...env, BOOTSTRAP_PERSONAL_API_KEY: '', BOOTSTRAP_PROJECT_API_KEY: '', BOOTSTRAP_EMAIL: '' }, await newDataDir());
    servers.push(second);
    const after = await Promise.all(reads.map((path) => call(second, 'GET', path, key)));
    expect(after).toEqual(before.map(stable));
    expect(await answers(second)).toEqual([{ 'pro-only': true, uploaded: true }, { 'pro-only': false, uploaded: false }]);
  }, 90_000);
});
