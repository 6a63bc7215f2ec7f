import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { BASE, NOT_FOUND, createOtherAccount, createTestApp, errorOf, type TestApp } from '../helpers/test-app';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const ISO = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

const fullShape = (overrides: Record<string, unknown>) => ({
  id: expect.any(Number),
  project_id: expect.any(Number),
  uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
  organization: t.account.organization.id,
  api_token: expect.stringMatching(/^phc_[A-Za-z0-9_-]{43}$/),
  app_urls: [],
  name: 'Default project',
  chat_incoming_webhook: null,
  created_at: ISO,
  updated_at: ISO,
  anonymize_ips: false,
  completed_snippet_onboarding: false,
  ingested_event: false,
  test_account_filters: [],
  test_account_filters_default_checked: false,
  path_cleaning_filters: [],
  is_demo: false,
  timezone: 'UTC',
  data_attributes: ['data-attr'],
  person_display_name_properties: ['email', 'name', 'username'],
  correlation_config: {},
  session_recording_opt_in: false,
  capture_console_log_opt_in: true,
  capture_performance_opt_in: true,
  effective_membership_level: 15,
  access_control: false,
  has_group_types: false,
  primary_dashboard: null,
  live_events_columns: null,
  recording_domains: null,
  events_retention_days: null,
  person_on_events_querying_enabled: true,
  groups_on_events_querying_enabled: true,
  ...overrides,
});

const EVERY_WRITABLE = {
  app_urls: ['https://example.com'],
  name: 'Everything',
  chat_incoming_webhook: 'https://hooks.example.com/x',
  anonymize_ips: true,
  completed_snippet_onboarding: true,
  test_account_filters: [{ key: 'email', value: '@example.com', operator: 'not_icontains', type: 'person' }],
  test_account_filters_default_checked: true,
  path_cleaning_filters: [{ alias: 'id', regex: '\\d+' }],
  is_demo: true,
  timezone: 'Europe/Berlin',
  data_attributes: ['data-attr', 'data-test'],
  person_display_name_properties: ['email'],
  correlation_config: { excluded_person_property_names: ['$os'] },
  session_recording_opt_in: true,
  capture_console_log_opt_in: false,
  capture_performance_opt_in: false,
  access_control: true,
  primary_dashboard: 7,
  live_events_columns: ['event', 'person'],
  recording_domains: ['https://app.example.com'],
  events_retention_days: 30,
};

describe('projects', () => {
  test('list gives the reduced shape in the envelope', async () => {
    const res = await t.json('GET', '/api/projects/');
    expect(res.status).toBe(200);
    const p = t.account.project;
    expect(res.body).toEqual({
      count: 1,
      next: null,
      previous: null,
      results: [
        {
          id: p.id,
          uuid: p.uuid,
          organization: t.account.organization.id,
          api_token: p.apiToken,
          name: 'Default project',
          completed_snippet_onboarding: false,
          ingested_event: false,
          is_demo: false,
          timezone: 'UTC',
          access_control: false,
          effective_membership_level: 15,
        },
      ],
    });
  });

  test('retrieve by id and by @current give the full shape', async () => {
    const byId = await t.json('GET', `/api/projects/${t.account.project.id}/`);
    expect(byId.status).toBe(200);
    expect(byId.body).toEqual(fullShape({ id: t.account.project.id, project_id: t.account.project.id, api_token: t.account.project.apiToken }));
    const current = await t.json('GET', '/api/projects/@current/');
    expect(current.body).toEqual(byId.body);
  });

  test('create accepts and persists every writable field', async () => {
    const created = await t.json('POST', '/api/projects/', { body: EVERY_WRITABLE });
    expect(created.status).toBe(201);
    expect(created.body).toEqual(fullShape(EVERY_WRITABLE));
    const again = await t.json('GET', `/api/projects/${created.body.id}/`);
    expect(again.body).toEqual(created.body);
    expect(created.body.api_token).not.toBe(t.account.project.apiToken);
  });

  test('partial update changes only what is sent', async () => {
    const created = await t.json('POST', '/api/projects/', { body: { name: 'Patch me' } });
    const patched = await t.json('PATCH', `/api/projects/${created.body.id}/`, { body: { anonymize_ips: true, timezone: 'Asia/Tokyo' } });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({ ...created.body, anonymize_ips: true, timezone: 'Asia/Tokyo', updated_at: ISO });
    const renamed = await t.json('PATCH', `/api/projects/${created.body.id}/`, { body: { name: 'Renamed' } });
    expect(renamed.body).toEqual({ ...patched.body, name: 'Renamed', updated_at: ISO });
  });

  test.each([
    [{ timezone: 'America/I_Dont_Exist' }, errorOf('invalid_choice', 'validation_error', '"America/I_Dont_Exist" is not a valid choice.', 'timezone')],
    [{ anonymize_ips: 'yes' }, errorOf('invalid_input', 'validation_error', 'Expected boolean', 'anonymize_ips')],
    [{ primary_dashboard: 'one' }, errorOf('invalid_input', 'validation_error', expect.any(String) as never, 'primary_dashboard')],
    [{ app_urls: 'https://x' }, errorOf('invalid_input', 'validation_error', expect.any(String) as never, 'app_urls')],
    [{ name: '' }, errorOf('invalid_input', 'validation_error', expect.any(String) as never, 'name')],
    [{ events_retention_days: 0 }, errorOf('invalid_input', 'validation_error', expect.any(String) as never, 'events_retention_days')],
    [{ events_retention_days: 'ten' }, errorOf('invalid_input', 'validation_error', expect.any(String) as never, 'events_retention_days')],
  ])('a bad field is a 400 naming it: %j', async (body, expected) => {
    const res = await t.json('PATCH', `/api/projects/${t.account.project.id}/`, { body });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(expected);
    const unchanged = await t.json('GET', `/api/projects/${t.account.project.id}/`);
    expect(unchanged.body.timezone).toBe('UTC');
    expect(unchanged.body.anonymize_ips).toBe(false);
  });

  test("events_retention_days shows the server's EVENTS_RETENTION_DAYS until the project sets its own; null keeps forever", async () => {
    const withDefault = await createTestApp({ EVENTS_RETENTION_DAYS: '90' });
    try {
      const path = `/api/projects/${withDefault.account.project.id}/`;
      expect((await withDefault.json('GET', path)).body.events_retention_days).toBe(90);
      expect((await withDefault.json('PATCH', path, { body: { events_retention_days: 7 } })).body.events_retention_days).toBe(7);
      expect((await withDefault.json('PATCH', path, { body: { name: 'Other' } })).body.events_retention_days).toBe(7);
      expect((await withDefault.json('PATCH', path, { body: { events_retention_days: null } })).body.events_retention_days).toBeNull();
      expect((await withDefault.json('GET', path)).body.events_retention_days).toBeNull();
    } finally {
      await withDefault.close();
    }
  });

  test('create without a name is a 400', async () => {
    const res = await t.json('POST', '/api/projects/', { body: { timezone: 'UTC' } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(errorOf('invalid_input', 'validation_error', expect.any(String) as never, 'name'));
  });

  test('delete removes the project', async () => {
    const created = await t.json('POST', '/api/projects/', { body: { name: 'Doomed' } });
    const del = await t.call('DELETE', `/api/projects/${created.body.id}/`);
    expect(del.status).toBe(204);
    expect(await del.text()).toBe('');
    expect((await t.json('GET', `/api/projects/${created.body.id}/`)).body).toEqual(NOT_FOUND);
  });

  test.each(['999999', 'abc', '1;DROP', '-1', '1.5'])('an unknown or malformed id is a 404: %s', async (id) => {
    const res = await t.json('GET', `/api/projects/${encodeURIComponent(id)}/`);
    expect(res.status).toBe(404);
    expect(res.body).toEqual(NOT_FOUND);
  });

  test('pagination links keep the other parameters', async () => {
    const res = await t.json('GET', '/api/projects/?limit=1&offset=1&zeta=1');
    expect(res.body.count).toBeGreaterThanOrEqual(3);
    expect(res.body.next).toBe(`${BASE}/api/projects/?limit=1&offset=2&zeta=1`);
    expect(res.body.previous).toBe(`${BASE}/api/projects/?limit=1&zeta=1`);
    expect(res.body.results).toHaveLength(1);
  });
});

describe('another organization', () => {
  test('sees none of the first one and cannot change it', async () => {
    const other = await createOtherAccount(t, 'projects-other@example.com');
    const key = other.personalApiKey.value;
    const list = await t.json('GET', '/api/projects/', { key });
    expect(list.body).toEqual({ count: 1, next: null, previous: null, results: [expect.objectContaining({ id: other.project.id })] });
    const id = t.account.project.id;
    for (const [method, body] of [['GET'], ['PATCH', { name: 'stolen' }], ['DELETE']] as const) {
      const res = await t.json(method, `/api/projects/${id}/`, { key, body });
      expect(res.status).toBe(404);
      expect(res.body).toEqual(NOT_FOUND);
    }
    const mine = await t.json('GET', `/api/projects/${id}/`);
    expect(mine.body.name).not.toBe('stolen');
    expect(JSON.stringify(list.body)).not.toContain(t.account.project.apiToken);
  });
});
