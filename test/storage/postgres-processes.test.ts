import { afterEach, describe, expect, test } from 'bun:test';
import { rm } from 'node:fs/promises';
import { createTestDatabase, POSTGRES_SKIP_REASON, postgresAvailable } from '../helpers/postgres';
import { newDataDir, startServer, TEST_KEYS, type ServerProcess } from '../helpers/server-process';
import { createSharingTestApp, createTestApp, type TestApp } from '../helpers/test-app';

/**
 * Server processes sharing one management database (META_STORE): what one changes, the others
 * answer within a moment, although each caches projects, keys and flags (a token for good, a key
 * and a project for 10 s, flags until a change); and a server started later on an empty data
 * directory serves the same projects, keys and flags.
 */
const run = postgresAvailable ? describe : describe.skip;
const title = (s: string) => (postgresAvailable ? s : `${s} (skipped: ${POSTGRES_SKIP_REASON})`);

/** Ask until `holds` (a change made by the other process arrives within a moment), at most 3 s. */
async function eventually<T>(ask: () => Promise<T>, holds: (value: T) => boolean): Promise<T> {
  const until = Date.now() + 3_000;
  for (;;) {
    const value = await ask();
    if (holds(value) || Date.now() > until) return value;
    await Bun.sleep(20);
  }
}

run(title('two server processes on one PostgreSQL database'), () => {
  let a: TestApp;
  let b: TestApp;
  afterEach(async () => {
    await b?.close();
    await a?.close();
  });

  test("each drops its cached keys, projects and flags when the other changes them", async () => {
    a = await createTestApp({ META_STORE: await createTestDatabase() });
    b = await createSharingTestApp(a);
    const token = a.account.project.apiToken;
    const projectUrl = `/api/projects/${a.account.project.id}/`;
    const decide = (app: TestApp) => app.json('POST', '/decide/?v=3', { key: null, body: { token, distinct_id: 'user-1' } });

    // Warm B's caches: the key, the project, the token and the project's flags.
    expect((await b.json('GET', projectUrl)).body.name).toBe('Default project');
    expect((await decide(b)).body.featureFlags).toEqual({});

    expect((await a.json('PATCH', projectUrl, { body: { name: 'Renamed on A' } })).status).toBe(200);
    expect((await eventually(() => b.json('GET', projectUrl), (r) => r.body.name === 'Renamed on A')).body.name).toBe('Renamed on A');

    const flag = await a.json('POST', `/api/projects/${a.account.project.id}/feature_flags/`, { body: { key: 'from-a', filters: { groups: [{ properties: [], rollout_percentage: 100 }] } } });
    expect(flag.status).toBe(201);
    expect((await eventually(() => decide(b), (r) => r.body.featureFlags?.['from-a'] === true)).body.featureFlags).toEqual({ 'from-a': true });
    await a.json('PATCH', `/api/projects/${a.account.project.id}/feature_flags/${flag.body.id}/`, { body: { active: false } });
    // An inactive flag is left out of the answer.
    expect((await eventually(() => decide(b), (r) => !('from-a' in r.body.featureFlags))).body.featureFlags).toEqual({});

    const cohort = await a.json('POST', `/api/projects/${a.account.project.id}/cohorts/`, { body: { name: 'Made on A', filters: { properties: { type: 'AND', values: [] } } } });
    expect(cohort.status).toBe(201);
    expect((await b.json('GET', `/api/projects/${a.account.project.id}/cohorts/${cohort.body.id}/`)).body.name).toBe('Made on A');

    // A key made on A works on B at once; revoked on A, B refuses it within a moment.
    const key = (await a.json('POST', '/api/personal_api_keys/', { body: { label: 'shared' } })).body;
    expect((await b.json('GET', '/api/users/@me/', { key: key.value })).status).toBe(200);
    expect((await a.call('DELETE', `/api/personal_api_keys/${key.id}/`)).status).toBe(204);
    expect((await eventually(() => b.json('GET', '/api/users/@me/', { key: key.value }), (r) => r.status === 401)).status).toBe(401);

    // A project deleted on A: B stops accepting its token (which it otherwise keeps for good).
    const other = await a.json('POST', '/api/projects/', { body: { name: 'Short-lived' } });
    const capture = (app: TestApp) => app.json('POST', '/capture/', { key: null, body: { api_key: other.body.api_token, event: 'e', distinct_id: 'd' } });
    expect((await capture(b)).status).toBe(200);
    expect((await a.call('DELETE', `/api/projects/${other.body.id}/`)).status).toBe(204);
    expect((await eventually(() => capture(b), (r) => r.status === 401)).status).toBe(401);
  }, 60_000);
});

run(title('a server restarted on an empty DATA_DIR against the same PostgreSQL database'), () => {
  const servers: ServerProcess[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      if (s.proc.exitCode === null) await s.stop();
      await rm(s.dataDir, { recursive: true, force: true });
    }
  });

  test('serves the same projects, keys and flags', async () => {
    const metaStore = await createTestDatabase();
    const auth = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
    const first = await startServer({ META_STORE: metaStore });
    servers.push(first);
    const created: any = await (await fetch(`${first.url}/api/personal_api_keys/`, { method: 'POST', headers: auth(TEST_KEYS.personal), body: JSON.stringify({ label: 'ci' }) })).json();
    const project: any = await (await fetch(`${first.url}/api/projects/`, { method: 'POST', headers: auth(TEST_KEYS.personal), body: JSON.stringify({ name: 'Second' }) })).json();
    const flagBody = { key: 'kept', filters: { groups: [{ properties: [], rollout_percentage: 100 }] } };
    expect((await fetch(`${first.url}/api/projects/${project.id}/feature_flags/`, { method: 'POST', headers: auth(created.value), body: JSON.stringify(flagBody) })).status).toBe(201);
    const projectsBefore = await (await fetch(`${first.url}/api/projects/`, { headers: auth(TEST_KEYS.personal) })).json();
    expect(await first.stop()).toBe(0);

    // Another server, another (empty) data directory: nothing it needs is there.
    const second = await startServer({ META_STORE: metaStore, BOOTSTRAP_PERSONAL_API_KEY: '', BOOTSTRAP_PROJECT_API_KEY: '', BOOTSTRAP_EMAIL: '' }, await newDataDir());
    servers.push(second);
    expect(second.output()).not.toContain('phx_');
    const projectsAfter = await (await fetch(`${second.url}/api/projects/`, { headers: auth(created.value) })).json();
    expect(projectsAfter).toEqual(projectsBefore);
    const decide = await fetch(`${second.url}/decide/?v=3`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: project.api_token, distinct_id: 'someone' }) });
    expect(((await decide.json()) as any).featureFlags).toEqual({ kept: true });
    const capture = await fetch(`${second.url}/capture/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: TEST_KEYS.project, event: 'after-restart', distinct_id: 'd' }) });
    expect(capture.status).toBe(200);
  }, 60_000);
});
