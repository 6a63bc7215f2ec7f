import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { NOT_AUTHENTICATED, NOT_FOUND, createOtherAccount, createTestApp, errorOf, type TestApp } from '../helpers/test-app';

let t: TestApp;
let base: string;
beforeAll(async () => {
  t = await createTestApp();
  base = `/api/projects/${t.account.project.id}/feature_flags`;
});
afterAll(() => t.close());

const ISO = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
const invalid = (detail: string, attr: string | null = 'filters') => errorOf('invalid_input', 'validation_error', detail, attr);

const creator = () => ({
  id: t.account.user.id,
  uuid: t.account.user.uuid,
  distinct_id: t.account.user.distinctId,
  first_name: t.account.user.firstName,
  email: t.account.user.email,
});

const flagShape = (overrides: Record<string, unknown>) => ({
  id: expect.any(Number),
  name: '',
  key: expect.any(String),
  filters: { groups: [{ properties: [], rollout_percentage: null }], payloads: {} },
  deleted: false,
  active: true,
  created_by: creator(),
  created_at: ISO,
  updated_at: ISO,
  version: 1,
  is_simple_flag: true,
  rollout_percentage: null,
  ensure_experience_continuity: false,
  experiment_set: [],
  surveys: [],
  features: [],
  tags: [],
  can_edit: true,
  ...overrides,
});

const create = (body: Record<string, unknown>) => t.json('POST', `${base}/`, { body });

describe('create and read', () => {
  test('a rollout flag: 201 with the whole body; rollout_percentage derived', async () => {
    const filters = { groups: [{ properties: [], rollout_percentage: 50 }] };
    const res = await create({ key: 'beta-feature', name: 'Beta', filters });
    expect(res.status).toBe(201);
    expect(res.body).toEqual(flagShape({ key: 'beta-feature', name: 'Beta', filters: { ...filters, payloads: {} }, rollout_percentage: 50 }));
    const again = await t.json('GET', `${base}/${res.body.id}/`);
    expect(again).toMatchObject({ status: 200, body: res.body });
  });

  test('without filters the flag is on for everyone; rollout_percentage in the body is read-only', async () => {
    const res = await create({ key: 'everyone', rollout_percentage: 10, active: false, ensure_experience_continuity: true });
    expect(res.status).toBe(201);
    expect(res.body).toEqual(flagShape({ key: 'everyone', active: false, ensure_experience_continuity: true }));
  });

  test('flags with properties, several conditions or groups are not simple', async () => {
    const withProperty = await create({
      key: 'pro-users',
      filters: { groups: [{ properties: [{ key: 'plan', type: 'person', value: 'pro', operator: 'exact' }], rollout_percentage: 30 }] },
    });
    expect(withProperty.body).toMatchObject({ is_simple_flag: false, rollout_percentage: null });
    const two = await create({ key: 'two-conditions', filters: { groups: [{ rollout_percentage: 10 }, { rollout_percentage: 20 }] } });
    expect(two.body).toMatchObject({ is_simple_flag: false, rollout_percentage: null });
    const group = await create({ key: 'company-flag', filters: { aggregation_group_type_index: 0, groups: [{ properties: [], rollout_percentage: 40 }] } });
    expect(group.body).toMatchObject({ is_simple_flag: false, rollout_percentage: null });
  });

  test('multivariate flags keep variants and payloads (JSON values stored as text)', async () => {
    const filters = {
      groups: [{ properties: [], rollout_percentage: null }],
      multivariate: { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'test', rollout_percentage: 50 }] },
      payloads: { control: '{"a":1}', test: { b: 2 } },
    };
    const res = await create({ key: 'experiment', filters });
    expect(res.status).toBe(201);
    expect(res.body.filters).toEqual({ ...filters, payloads: { control: '{"a":1}', test: '{"b":2}' } });
  });

  test('list: live flags, newest first, in the envelope, paginated', async () => {
    const res = await t.json('GET', `${base}/`);
    expect(res.status).toBe(200);
    expect(res.body.count).toBe(res.body.results.length);
    expect(res.body.results.map((f: { key: string }) => f.key)).toEqual([
      'experiment',
      'company-flag',
      'two-conditions',
      'pro-users',
      'everyone',
      'beta-feature',
    ]);
    const page = await t.json('GET', `${base}/?limit=2&offset=2`);
    expect(page.body).toMatchObject({
      count: 6,
      next: `http://test.local${base}/?limit=2&offset=4`,
      previous: `http://test.local${base}/?limit=2`,
    });
    expect(page.body.results.map((f: { key: string }) => f.key)).toEqual(['two-conditions', 'pro-users']);
  });

  test('unknown, malformed and other projects’ ids are 404', async () => {
    expect(await t.json('GET', `${base}/99999/`)).toMatchObject({ status: 404, body: NOT_FOUND });
    expect(await t.json('GET', `${base}/abc/`)).toMatchObject({ status: 404, body: NOT_FOUND });
    expect(await t.json('GET', `/api/projects/99999/feature_flags/`)).toMatchObject({ status: 404, body: NOT_FOUND });
  });

  test('@current names the caller’s current project', async () => {
    const res = await t.json('GET', '/api/projects/@current/feature_flags/');
    expect(res.body.count).toBe(6);
  });
});

describe('validation', () => {
  test.each([
    ['missing key', { filters: { groups: [] } }, errorOf('required', 'validation_error', 'This field is required.', 'key')],
    ['bad key', { key: 'has space' }, invalid('Only letters, numbers, hyphens (-) & underscores (_) are allowed.', 'key')],
    ['duplicate key', { key: 'beta-feature' }, errorOf('unique', 'validation_error', 'There is already a feature flag with this key.', 'key')],
    [
      'variants not summing to 100',
      { key: 'bad-variants', filters: { groups: [{}], multivariate: { variants: [{ key: 'a', rollout_percentage: 60 }, { key: 'b', rollout_percentage: 30 }] } } },
      invalid('Invalid variant definitions: Variant rollout percentages must sum to 100.'),
    ],
    ['payload key of a boolean flag', { key: 'bad-payload', filters: { groups: [{}], payloads: { yes: '1' } } }, invalid("Payload keys must be 'true' for boolean flags")],
    [
      'unknown operator',
      { key: 'bad-operator', filters: { groups: [{ properties: [{ key: 'a', type: 'person', value: 'x', operator: 'nearly' }] }] } },
      expect.objectContaining({ type: 'validation_error', attr: 'filters' }),
    ],
    [
      'unknown cohort',
      { key: 'bad-cohort', filters: { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 4242 }] }] } },
      invalid('Cohort with id 4242 does not exist'),
    ],
  ])('%s → 400', async (_, body, error) => {
    const res = await create(body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(error);
  });

  test('PATCH validates the same way', async () => {
    const { body: flag } = await create({ key: 'patch-target' });
    const res = await t.json('PATCH', `${base}/${flag.id}/`, { body: { key: 'beta-feature' } });
    expect(res).toMatchObject({ status: 400, body: errorOf('unique', 'validation_error', 'There is already a feature flag with this key.', 'key') });
  });
});

describe('update and soft delete', () => {
  test('PATCH changes fields, bumps version and updated_at', async () => {
    const { body: flag } = await create({ key: 'to-update', filters: { groups: [{ rollout_percentage: 10 }] } });
    const res = await t.json('PATCH', `${base}/${flag.id}/`, {
      body: { name: 'Renamed', active: false, filters: { groups: [{ properties: [], rollout_percentage: 80 }] } },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(
      flagShape({
        id: flag.id,
        key: 'to-update',
        name: 'Renamed',
        active: false,
        version: 2,
        filters: { groups: [{ properties: [], rollout_percentage: 80 }], payloads: {} },
        rollout_percentage: 80,
      }),
    );
  });

  test('PATCH filters without `groups` keeps the stored filters, as PostHog does', async () => {
    const { body: flag } = await create({ key: 'keep-filters', filters: { groups: [{ rollout_percentage: 25 }] } });
    const res = await t.json('PATCH', `${base}/${flag.id}/`, { body: { filters: { payloads: {} } } });
    expect(res.body.filters).toEqual(flag.filters);
  });

  test('DELETE is 405; PATCH {deleted: true} hides the flag and frees its key', async () => {
    const { body: flag } = await create({ key: 'short-lived' });
    const del = await t.json('DELETE', `${base}/${flag.id}/`);
    expect(del).toMatchObject({ status: 405, body: errorOf('method_not_allowed', 'invalid_request', 'Method "DELETE" not allowed.') });

    const soft = await t.json('PATCH', `${base}/${flag.id}/`, { body: { deleted: true } });
    expect(soft.body).toMatchObject({ id: flag.id, deleted: true, version: 2 });
    const list = await t.json('GET', `${base}/?limit=100`);
    expect(list.body.results.some((f: { id: number }) => f.id === flag.id)).toBe(false);
    expect((await t.json('GET', `${base}/${flag.id}/`)).body).toMatchObject({ deleted: true });

    const reused = await create({ key: 'short-lived' });
    expect(reused.status).toBe(201);
    expect(reused.body.id).not.toBe(flag.id);
    // PostHog hard-deletes the soft-deleted holder of a reused key.
    expect((await t.json('GET', `${base}/${flag.id}/`)).status).toBe(404);
  });

  test('renaming to the key of a soft-deleted flag takes it over', async () => {
    const { body: old } = await create({ key: 'old-name' });
    await t.json('PATCH', `${base}/${old.id}/`, { body: { deleted: true } });
    const { body: flag } = await create({ key: 'new-name' });
    const res = await t.json('PATCH', `${base}/${flag.id}/`, { body: { key: 'old-name' } });
    expect(res.body).toMatchObject({ id: flag.id, key: 'old-name' });
    expect((await t.json('GET', `${base}/${old.id}/`)).status).toBe(404);
  });
});

describe('access', () => {
  test('no key → 401; a second organization sees none of these flags', async () => {
    expect(await t.json('GET', `${base}/`, { key: null })).toMatchObject({ status: 401, body: NOT_AUTHENTICATED });
    const other = await createOtherAccount(t, 'flags-other@example.com');
    const key = other.personalApiKey.value;
    expect(await t.json('GET', `${base}/`, { key })).toMatchObject({ status: 404, body: NOT_FOUND });
    expect(await t.json('POST', `${base}/`, { key, body: { key: 'intruder' } })).toMatchObject({ status: 404 });
    const own = await t.json('GET', `/api/projects/${other.project.id}/feature_flags/`, { key });
    expect(own.body).toEqual({ count: 0, next: null, previous: null, results: [] });
    const flag = (await t.json('GET', `${base}/`)).body.results[0];
    expect(await t.json('GET', `/api/projects/${other.project.id}/feature_flags/${flag.id}/`, { key })).toMatchObject({ status: 404 });
  });
});

describe('remote_config', () => {
  test('the `true` payload of a flag, by key or id; null without one; 404 for unknown flags', async () => {
    const { body: flag } = await create({ key: 'remote-settings', filters: { groups: [{}], payloads: { true: '{"theme":"dark"}' } } });
    for (const ref of ['remote-settings', String(flag.id)]) {
      const res = await t.call('GET', `/api/projects/@current/feature_flags/${ref}/remote_config?token=${t.account.project.apiToken}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toBe('{"theme":"dark"}');
    }
    const none = await t.call('GET', '/api/projects/@current/feature_flags/beta-feature/remote_config/');
    expect(await none.json()).toBeNull();
    expect((await t.json('GET', '/api/projects/@current/feature_flags/nope/remote_config/')).status).toBe(404);
  });
});
