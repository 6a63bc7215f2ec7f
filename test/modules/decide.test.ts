import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { gzipSync } from 'node:zlib';
import { BASE, createOtherAccount, createTestApp, errorOf, type TestApp } from '../helpers/test-app';

/**
 * `/decide/` in every version, `/flags/`, remote config, through HTTP with whole bodies. Flags:
 * PostHog's published vectors (`beta-feature` at 50 %, a 50/25/25 multivariate flag) and an
 * inactive one, which is never returned.
 */

let t: TestApp;
let token: string;
const ids: Record<string, number> = {};
const ORIGIN = 'https://shop.example.com';
const UUID = expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);

const VARIANTS = [
  { key: 'first-variant', name: 'First', rollout_percentage: 50 },
  { key: 'second-variant', name: 'Second', rollout_percentage: 25 },
  { key: 'third-variant', name: 'Third', rollout_percentage: 25 },
];

beforeAll(async () => {
  t = await createTestApp();
  token = t.account.project.apiToken;
  const flags = [
    { key: 'beta-feature', filters: { groups: [{ properties: [], rollout_percentage: 50 }], payloads: { true: '{"beta":true}' } } },
    { key: 'multivariate-flag', filters: { groups: [{ properties: [], rollout_percentage: null }], multivariate: { variants: VARIANTS }, payloads: { 'first-variant': '"one"' } } },
    { key: 'switched-off', active: false },
  ];
  for (const flag of flags) {
    const res = await t.json('POST', '/api/projects/@current/feature_flags/', { body: flag });
    expect(res.status).toBe(201);
    ids[flag.key] = res.body.id;
  }
});
afterAll(() => t.close());

const post = (path: string, body: unknown, headers: Record<string, string> = {}) => t.json('POST', path, { key: null, body, headers: { origin: ORIGIN, ...headers } });

const BASE_CONFIG = {
  config: { enable_collect_everything: true },
  editorParams: {},
  toolbarParams: {},
  isAuthenticated: false,
  supportedCompression: ['gzip', 'gzip-js', 'lz64'],
  sessionRecording: false,
  captureDeadClicks: false,
  capturePerformance: { network_timing: true, web_vitals: false, web_vitals_allowed_metrics: null },
  autocapture_opt_out: false,
  autocaptureExceptions: false,
  elementsChainAsString: true,
  surveys: false,
  heatmaps: false,
  flagsPersistenceDefault: false,
  defaultIdentifiedOnly: true,
  siteApps: [],
  requestId: UUID,
};

const REMOTE_CONFIG = {
  supportedCompression: ['gzip', 'gzip-js'],
  hasFeatureFlags: true,
  captureDeadClicks: false,
  capturePerformance: { network_timing: true, web_vitals: false, web_vitals_allowed_metrics: null },
  autocapture_opt_out: false,
  autocaptureExceptions: false,
  elementsChainAsString: true,
  errorTracking: { autocaptureExceptions: false, suppressionRules: [] },
  sessionRecording: false,
  heatmaps: false,
  surveys: false,
  defaultIdentifiedOnly: true,
  siteApps: [],
};

const matched = (key: string, variant: string | null, payload: unknown = null) => ({
  key,
  enabled: true,
  variant,
  reason: { code: 'condition_match', condition_index: 0, description: 'Matched condition set 1' },
  metadata: { id: ids[key], version: 1, description: null, payload },
});

const outOfRollout = (key: string) => ({
  key,
  enabled: false,
  variant: null,
  reason: { code: 'out_of_rollout_bound', condition_index: 0, description: 'Out of rollout bound' },
  metadata: { id: ids[key], version: 1, description: null, payload: null },
});

describe('/decide/ versions (PostHog vectors)', () => {
  test.each([
    ['', 'example_id', { featureFlags: ['beta-feature', 'multivariate-flag'] }],
    ['', 'another_id', { featureFlags: ['multivariate-flag'] }],
    ['?v=1', 'other_id', { featureFlags: ['beta-feature', 'multivariate-flag'] }],
    ['?v=2', 'example_id', { featureFlags: { 'beta-feature': true, 'multivariate-flag': 'first-variant' } }],
    ['?v=2', 'other_id', { featureFlags: { 'beta-feature': true, 'multivariate-flag': 'third-variant' } }],
    ['?v=2', 'another_id', { featureFlags: { 'multivariate-flag': 'first-variant' } }],
    // Django reads a version that is not an integer (posthog-js 1.19 sent its own) as 2.
    ['?v=1.19.0', 'another_id', { featureFlags: { 'multivariate-flag': 'first-variant' } }],
    [
      '?v=3',
      'example_id',
      {
        featureFlags: { 'beta-feature': true, 'multivariate-flag': 'first-variant' },
        errorsWhileComputingFlags: false,
        featureFlagPayloads: { 'beta-feature': '{"beta":true}', 'multivariate-flag': '"one"' },
      },
    ],
    [
      '?v=3',
      'another_id',
      {
        featureFlags: { 'beta-feature': false, 'multivariate-flag': 'first-variant' },
        errorsWhileComputingFlags: false,
        featureFlagPayloads: { 'multivariate-flag': '"one"' },
      },
    ],
    [
      '?v=4',
      'other_id',
      () => ({
        flags: { 'beta-feature': matched('beta-feature', null, '{"beta":true}'), 'multivariate-flag': matched('multivariate-flag', 'third-variant') },
        errorsWhileComputingFlags: false,
      }),
    ],
    [
      '?v=4',
      'another_id',
      () => ({
        flags: { 'beta-feature': outOfRollout('beta-feature'), 'multivariate-flag': matched('multivariate-flag', 'first-variant', '"one"') },
        errorsWhileComputingFlags: false,
      }),
    ],
  ] as Array<[string, string, object | (() => object)]>)('POST /decide/%s for %s', async (query, distinctId, flagPart) => {
    const res = await post(`/decide/${query}`, { token, distinct_id: distinctId });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...BASE_CONFIG, ...(typeof flagPart === 'function' ? flagPart() : flagPart) });
    expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(res.headers.get('content-type')).toBe('application/json');
  });

  test('server SDKs send no Origin: JSON without CORS headers, on /decide/ and /flags/ alike', async () => {
    for (const path of ['/decide/?v=2', '/flags/?v=2', '/flags/?v=2&config=true']) {
      const res = await t.json('POST', path, { key: null, body: { token, distinct_id: 'example_id' } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/json');
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    }
  });

  test('the spec’s body: `api_key` and v1/v2', async () => {
    expect((await post('/decide/', { api_key: token, distinct_id: 'example_id' })).body.featureFlags).toEqual(['beta-feature', 'multivariate-flag']);
    expect((await post('/decide/?v=2', { api_key: token, distinct_id: 'example_id' })).body.featureFlags).toEqual({
      'beta-feature': true,
      'multivariate-flag': 'first-variant',
    });
  });

  test('GET gives the default config; OPTIONS is a CORS preflight', async () => {
    const get = await t.json('GET', '/decide/', { key: null, headers: { origin: ORIGIN } });
    expect(get).toMatchObject({ status: 200 });
    expect(get.body).toEqual({
      config: { enable_collect_everything: true },
      editorParams: {},
      toolbarParams: {},
      isAuthenticated: false,
      supportedCompression: ['gzip', 'gzip-js', 'lz64'],
      sessionRecording: false,
      featureFlags: {},
    });
    expect(get.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    for (const path of ['/decide/', '/flags/']) {
      const preflight = await t.call('OPTIONS', path, {
        key: null,
        headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
      });
      expect(preflight.status).toBe(200);
      expect(preflight.headers.get('access-control-allow-origin')).toBe(ORIGIN);
      expect(preflight.headers.get('access-control-allow-headers')).toContain('Content-Type');
      expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    }
  });
});

describe('/decide/ bodies and keys', () => {
  const v2 = { 'beta-feature': true, 'multivariate-flag': 'first-variant' };

  test('gzip by Content-Encoding, by ?compression=gzip-js and by magic bytes (text/plain)', async () => {
    const gz = gzipSync(JSON.stringify({ token, distinct_id: 'example_id' }));
    for (const [path, headers] of [
      ['/decide/?v=2', { 'content-encoding': 'gzip', 'content-type': 'application/json' }],
      ['/decide/?v=2&compression=gzip-js', { 'content-type': 'text/plain' }],
      ['/flags/?v=2', { 'content-type': 'text/plain' }],
    ] as const) {
      const res = await t.app.handle(new Request(BASE + path, { method: 'POST', headers, body: gz }));
      expect(res.status).toBe(200);
      const body = (await res.json()) as { featureFlags?: unknown; flags: Record<string, { variant: string | null; enabled: boolean }> };
      expect(body.featureFlags ?? Object.fromEntries(Object.entries(body.flags).map(([k, f]) => [k, f.variant ?? f.enabled]))).toEqual(v2);
    }
  });

  test('base64 form `data=` (posthog-js 1.200) and the token in the query', async () => {
    const data = Buffer.from(JSON.stringify({ token, distinct_id: 'example_id' })).toString('base64');
    const res = await t.call('POST', '/decide/?v=3&ip=1&_=1700000000000&ver=1.200.0&compression=base64', {
      key: null,
      body: `data=${encodeURIComponent(data)}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { featureFlags: unknown }).featureFlags).toEqual(v2);
    const query = await post(`/decide/?v=2&token=${token}`, { distinct_id: 'example_id' });
    expect(query.body.featureFlags).toEqual(v2);
  });

  test('a personal API key with project_id stands in for the project key', async () => {
    const res = await post('/decide/?v=2', { api_key: t.account.personalApiKey.value, project_id: t.account.project.id, distinct_id: 'example_id' });
    expect(res).toMatchObject({ status: 200, body: { featureFlags: v2 } });
  });

  test.each([
    ['no key', {}, 401, errorOf('missing_api_key', 'authentication_error', 'No project API key provided. You can find your project API key in PostHog project settings.')],
    [
      'an unknown project key',
      { token: 'phc_doesNotExist' },
      401,
      errorOf('invalid_api_key', 'authentication_error', 'Project API key invalid. You can find your project API key in PostHog project settings.'),
    ],
    ['an invalid personal key', { api_key: 'phx_notARealKey123' }, 401, errorOf('invalid_personal_api_key', 'authentication_error', 'Invalid Personal API key.')],
    ['a personal key without project', { api_key: 'PERSONAL' }, 400, errorOf('invalid_project', 'validation_error', 'Invalid Project ID.', 'project_id')],
    ['no distinct_id', { token: 'TOKEN' }, 400, errorOf('required', 'validation_error', 'Decide requires a distinct_id.', 'distinct_id')],
  ])('%s → %i', async (_, fields, status, error) => {
    const body = JSON.parse(JSON.stringify({ distinct_id: 'someone', ...fields }).replace('PERSONAL', t.account.personalApiKey.value).replace('TOKEN', token));
    if (_ === 'no distinct_id') delete body.distinct_id;
    for (const path of ['/decide/', '/flags/?v=2']) {
      const res = await post(path, body);
      expect(res).toMatchObject({ status, body: error });
      expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    }
  });

  test('malformed JSON → 400 invalid_payload', async () => {
    const res = await t.json('POST', '/decide/', { key: null, body: '{"token": "x",}' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'validation_error', code: 'invalid_payload', attr: null });
    expect(res.body.detail).toStartWith('Malformed request data: Invalid JSON');
  });

  test('disable_flags gives no flags in the version’s shape; distinct_id may then be absent', async () => {
    expect((await post('/decide/', { token, disable_flags: true })).body.featureFlags).toEqual([]);
    expect((await post('/decide/?v=2', { token, distinct_id: 'x', disable_flags: 'true' })).body.featureFlags).toEqual({});
    expect((await post('/flags/?v=2', { token, distinct_id: 'x', disable_flags: true })).body.flags).toEqual({});
  });

  test('flag_keys_to_evaluate (and Rust’s flag_keys) limit the answer', async () => {
    const res = await post('/flags/?v=2', { token, distinct_id: 'example_id', flag_keys_to_evaluate: ['multivariate-flag', 'nope'] });
    expect(Object.keys(res.body.flags)).toEqual(['multivariate-flag']);
    const legacy = await post('/decide/?v=3', { token, distinct_id: 'example_id', flag_keys: ['beta-feature'] });
    expect(legacy.body.featureFlags).toEqual({ 'beta-feature': true });
  });

  test('a second organization’s key sees none of these flags', async () => {
    const other = await createOtherAccount(t, 'decide-other@example.com');
    const res = await post('/decide/?v=3', { token: other.project.apiToken, distinct_id: 'example_id' });
    expect(res.body).toMatchObject({ featureFlags: {}, featureFlagPayloads: {}, errorsWhileComputingFlags: false });
  });
});

describe('/flags/', () => {
  test('?v=2: the detailed map with requestId and evaluatedAt, nothing else', async () => {
    const res = await post('/flags/?v=2', { token, distinct_id: 'other_id' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      errorsWhileComputingFlags: false,
      flags: { 'beta-feature': matched('beta-feature', null, '{"beta":true}'), 'multivariate-flag': matched('multivariate-flag', 'third-variant') },
      requestId: UUID,
      evaluatedAt: expect.any(Number),
    });
  });

  test('?v=1: the legacy map of every flag with payloads', async () => {
    const res = await post('/flags/?v=1', { token, distinct_id: 'another_id' });
    expect(res.body).toEqual({
      errorsWhileComputingFlags: false,
      featureFlags: { 'beta-feature': false, 'multivariate-flag': 'first-variant' },
      featureFlagPayloads: { 'multivariate-flag': '"one"' },
      requestId: UUID,
      evaluatedAt: expect.any(Number),
    });
  });

  test('no v and no config: v2 with the remote config, as the Rust service defaults', async () => {
    const res = await post('/flags/', { token, distinct_id: 'example_id' });
    expect(res.body).toEqual({
      ...REMOTE_CONFIG,
      config: { enable_collect_everything: true },
      toolbarParams: {},
      isAuthenticated: false,
      errorsWhileComputingFlags: false,
      flags: { 'beta-feature': matched('beta-feature', null, '{"beta":true}'), 'multivariate-flag': matched('multivariate-flag', 'first-variant', '"one"') },
      requestId: UUID,
      evaluatedAt: expect.any(Number),
    });
  });

  test('GET gives the minimal config with no flags; HEAD is an empty 200', async () => {
    const res = await t.json('GET', '/flags/?v=2', { key: null });
    expect(res.body).toEqual({
      config: { enable_collect_everything: true },
      toolbarParams: {},
      isAuthenticated: false,
      supportedCompression: ['gzip', 'gzip-js'],
      sessionRecording: false,
      errorsWhileComputingFlags: false,
      flags: {},
      requestId: UUID,
      evaluatedAt: expect.any(Number),
    });
    const head = await t.call('HEAD', '/flags/', { key: null });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });

  test('a flag change is seen by the next check', async () => {
    const before = await post('/flags/?v=2', { token, distinct_id: 'another_id' });
    expect(before.body.flags['beta-feature'].enabled).toBe(false);
    await t.json('PATCH', `/api/projects/@current/feature_flags/${ids['beta-feature']}/`, { body: { filters: { groups: [{ rollout_percentage: 100 }] } } });
    const after = await post('/flags/?v=2', { token, distinct_id: 'another_id' });
    expect(after.body.flags['beta-feature']).toMatchObject({ enabled: true, metadata: { version: 2 } });
    await t.json('PATCH', `/api/projects/@current/feature_flags/${ids['beta-feature']}/`, { body: { active: false } });
    const off = await post('/flags/?v=2', { token, distinct_id: 'another_id' });
    expect(Object.keys(off.body.flags)).toEqual(['multivariate-flag']);
    await t.json('PATCH', `/api/projects/@current/feature_flags/${ids['beta-feature']}/`, {
      body: { active: true, filters: { groups: [{ properties: [], rollout_percentage: 50 }], payloads: { true: '{"beta":true}' } } },
    });
  });
});

describe('remote config', () => {
  test('/array/<token>/config: JSON', async () => {
    const res = await t.json('GET', `/array/${token}/config`, { key: null, headers: { origin: ORIGIN } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ token, ...REMOTE_CONFIG });
    expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
  });

  test('/array/<token>/config.js: the script posthog-js loads', async () => {
    const res = await t.call('GET', `/array/${token}/config.js`, { key: null });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/javascript');
    const window: { _POSTHOG_REMOTE_CONFIG?: Record<string, unknown> } = {};
    new Function('window', await res.text())(window);
    const { siteApps: _, ...config } = REMOTE_CONFIG;
    expect(window._POSTHOG_REMOTE_CONFIG).toEqual({ [token]: { config: { token, ...config }, siteApps: [] } });
  });

  test('hasFeatureFlags is false for a project without active flags; unknown tokens are 404', async () => {
    const other = await createOtherAccount(t, 'remote-config-other@example.com');
    expect((await t.json('GET', `/array/${other.project.apiToken}/config`, { key: null })).body.hasFeatureFlags).toBe(false);
    expect((await t.json('GET', '/array/phc_unknown/config', { key: null })).status).toBe(404);
    expect((await t.json('GET', '/array/phc_unknown/config.js', { key: null })).status).toBe(404);
  });
});
