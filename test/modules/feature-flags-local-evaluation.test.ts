import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { NOT_AUTHENTICATED, NOT_FOUND, createOtherAccount, createTestApp, errorOf, type TestApp } from '../helpers/test-app';
import { personEvent } from '../helpers/person-event';

let t: TestApp;
let token: string;
let cohortId: number;
let staticCohortId: number;
const flagIds: Record<string, number> = {};

const PRO_COHORT = {
  properties: { type: 'OR', values: [{ type: 'AND', values: [{ key: 'plan', type: 'person', value: 'pro', operator: 'exact' }] }] },
};

beforeAll(async () => {
  t = await createTestApp();
  token = t.account.project.apiToken;
  const cohort = await t.json('POST', '/api/projects/@current/cohorts/', { body: { name: 'Pro users', filters: PRO_COHORT } });
  expect(cohort.status).toBe(201);
  cohortId = cohort.body.id;
  const staticCohort = await t.json('POST', '/api/projects/@current/cohorts/', { body: { name: 'Listed', is_static: true } });
  staticCohortId = staticCohort.body.id;
  const flags = [
    { key: 'rollout', filters: { groups: [{ properties: [], rollout_percentage: 50 }] } },
    { key: 'inactive', active: false },
    { key: 'pro-cohort', filters: { groups: [{ properties: [{ key: 'id', type: 'cohort', value: cohortId }] }] } },
    { key: 'listed', filters: { groups: [{ properties: [{ key: 'id', type: 'cohort', value: staticCohortId }] }] } },
    { key: 'removed' },
  ];
  for (const flag of flags) {
    const res = await t.json('POST', '/api/projects/@current/feature_flags/', { body: flag });
    expect(res.status).toBe(201);
    flagIds[flag.key] = res.body.id;
  }
  await t.json('PATCH', `/api/projects/@current/feature_flags/${flagIds.removed}/`, { body: { deleted: true } });
  // A group type, as ingestion records it.
  await t.deps.storage.persons.ensureLoaded(t.account.project.id);
  t.deps.storage.persons.processEvent(
    t.account.project.id,
    personEvent({
      event: '$groupidentify',
      distinctId: 'someone',
      properties: { $group_type: 'company', $group_key: 'acme', $group_set: { name: 'Acme' } },
      timestamp: Date.now(),
    }),
  );
});
afterAll(() => t.close());

const localFlag = (key: string, filters: Record<string, unknown>) => ({
  id: flagIds[key],
  team_id: t.account.project.id,
  name: '',
  key,
  filters,
  deleted: false,
  active: true,
  ensure_experience_continuity: false,
  version: 1,
});

const expected = (cohorts: Record<string, unknown>) => ({
  flags: [
    localFlag('rollout', { groups: [{ properties: [], rollout_percentage: 50 }], payloads: {} }),
    localFlag('pro-cohort', { groups: [{ properties: [{ key: 'id', type: 'cohort', value: cohortId }] }], payloads: {} }),
    localFlag('listed', { groups: [{ properties: [{ key: 'id', type: 'cohort', value: staticCohortId }] }], payloads: {} }),
  ],
  group_type_mapping: { '0': 'company' },
  cohorts,
});

describe('local evaluation definitions', () => {
  test.each([
    ['/api/feature_flag/local_evaluation', 'posthog-node 3/4'],
    ['/api/feature_flag/local_evaluation/', 'with a slash'],
    ['/flags/definitions', 'posthog-node 5'],
  ])('%s (%s): active live flags, group types, and with send_cohorts the dynamic cohorts', async (path) => {
    const res = await t.json('GET', `${path}?token=${token}&send_cohorts`);
    expect(res.status).toBe(200);
    // Static cohorts are decided by membership, so only the dynamic one is sent.
    expect(res.body).toEqual(expected({ [String(cohortId)]: PRO_COHORT.properties }));
    expect(res.headers.get('etag')).toMatch(/^"[0-9a-f]{40}"$/);
  });

  test('without send_cohorts no cohorts are sent', async () => {
    const res = await t.json('GET', `/api/feature_flag/local_evaluation?token=${token}`);
    expect(res.body).toEqual(expected({}));
  });

  test('the project route gives the same', async () => {
    const res = await t.json('GET', `/api/projects/${t.account.project.id}/feature_flags/local_evaluation/?send_cohorts`);
    expect(res.body).toEqual(expected({ [String(cohortId)]: PRO_COHORT.properties }));
  });

  test('If-None-Match with the current ETag → 304 until a flag changes', async () => {
    const path = `/flags/definitions?token=${token}&send_cohorts`;
    const first = await t.call('GET', path);
    const etag = first.headers.get('etag')!;
    const unchanged = await t.call('GET', path, { headers: { 'if-none-match': etag } });
    expect(unchanged.status).toBe(304);
    expect(unchanged.headers.get('etag')).toBe(etag);
    expect(await unchanged.text()).toBe('');
    expect((await t.call('GET', path, { headers: { 'if-none-match': `W/${etag}, "other"` } })).status).toBe(304);

    await t.json('PATCH', `/api/projects/@current/feature_flags/${flagIds.rollout}/`, { body: { name: 'changed' } });
    const changed = await t.call('GET', path, { headers: { 'if-none-match': etag } });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
    expect(((await changed.json()) as { flags: unknown[] }).flags[0]).toMatchObject({ name: 'changed', version: 2 });
  });

  test('the personal key is required; bad and foreign tokens are refused', async () => {
    expect(await t.json('GET', `/flags/definitions?token=${token}`, { key: null })).toMatchObject({ status: 401, body: NOT_AUTHENTICATED });
    expect(await t.json('GET', `/flags/definitions?token=${token}`, { key: 'phx_notAKey000000000' })).toMatchObject({
      status: 401,
      body: errorOf('authentication_failed', 'authentication_error', 'Personal API key found in request Authorization header is invalid.'),
    });
    expect(await t.json('GET', '/flags/definitions?token=phc_unknown')).toMatchObject({
      status: 401,
      body: errorOf('invalid_api_key', 'authentication_error', 'Project API key invalid. You can find your project API key in PostHog project settings.'),
    });
    const other = await createOtherAccount(t, 'local-eval-other@example.com');
    const foreign = await t.json('GET', `/flags/definitions?token=${token}`, { key: other.personalApiKey.value });
    expect(foreign).toMatchObject({ status: 404, body: NOT_FOUND });
    const own = await t.json('GET', `/flags/definitions?token=${other.project.apiToken}`, { key: other.personalApiKey.value });
    expect(own.body).toEqual({ flags: [], group_type_mapping: {}, cohorts: {} });
  });
});
