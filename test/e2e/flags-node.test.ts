import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { rm } from 'node:fs/promises';
import { PostHog as PostHog3 } from 'posthog-node-3';
import { PostHog as PostHog4 } from 'posthog-node-4';
import { PostHog as PostHog5 } from 'posthog-node-5';
import { TEST_KEYS, startServer, type ServerProcess } from '../helpers/server-process';

/**
 * Real posthog-node clients (3.6.3 → `/decide/?v=3` and `/api/feature_flag/local_evaluation`,
 * 4.18.0 → `/flags/?v=2` and the same local evaluation, 5.70.0 → `/flags/?v=2` and
 * `/flags/definitions`) against the real server: PostHog's vectors remotely and locally.
 */

let server: ServerProcess;

const FLAGS = [
  { key: 'beta-feature', filters: { groups: [{ properties: [], rollout_percentage: 50 }] } },
  {
    key: 'multivariate-flag',
    filters: {
      groups: [{ properties: [], rollout_percentage: null }],
      multivariate: {
        variants: [
          { key: 'first-variant', rollout_percentage: 50 },
          { key: 'second-variant', rollout_percentage: 25 },
          { key: 'third-variant', rollout_percentage: 25 },
        ],
      },
      payloads: { 'first-variant': '{"color":"blue"}' },
    },
  },
  { key: 'staff', filters: { groups: [{ properties: [{ key: 'email', type: 'person', value: '@posthog.com', operator: 'icontains' }] }] } },
];

beforeAll(async () => {
  server = await startServer();
  for (const flag of FLAGS) {
    const res = await fetch(`${server.url}/api/projects/@current/feature_flags/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_KEYS.personal}`, 'content-type': 'application/json' },
      body: JSON.stringify(flag),
    });
    expect(res.status).toBe(201);
  }
}, 30_000);
afterAll(async () => {
  await server?.stop();
  if (server) await rm(server.dataDir, { recursive: true, force: true });
});

/** What every client version offers, with `$feature_flag_called` events off (capture is not under test). */
interface Client {
  getFeatureFlag(key: string, id: string, options?: Record<string, unknown>): Promise<unknown>;
  isFeatureEnabled(key: string, id: string, options?: Record<string, unknown>): Promise<unknown>;
  getAllFlags(id: string, options?: Record<string, unknown>): Promise<Record<string, unknown>>;
  getFeatureFlagPayload(key: string, id: string, value?: unknown, options?: Record<string, unknown>): Promise<unknown>;
  reloadFeatureFlags(): Promise<void>;
}

type Version = { name: string; make: (options: Record<string, unknown>) => Client; close: (client: Client) => Promise<void> };

const VERSIONS: Version[] = [
  {
    name: 'posthog-node 3',
    make: (options) => new PostHog3(TEST_KEYS.project, options) as unknown as Client,
    close: (client) => (client as unknown as PostHog3).shutdownAsync(),
  },
  {
    name: 'posthog-node 4',
    make: (options) => new PostHog4(TEST_KEYS.project, options) as unknown as Client,
    close: (client) => (client as unknown as PostHog4).shutdown(),
  },
  {
    name: 'posthog-node 5',
    make: (options) => new PostHog5(TEST_KEYS.project, options) as unknown as Client,
    close: (client) => (client as unknown as PostHog5).shutdown(),
  },
];

const QUIET = { sendFeatureFlagEvents: false };

async function expectVectors(client: Client, extra: Record<string, unknown>) {
  const options = { ...QUIET, ...extra };
  expect(await client.getFeatureFlag('beta-feature', 'example_id', options)).toBe(true);
  expect(await client.getFeatureFlag('beta-feature', 'other_id', options)).toBe(true);
  expect(await client.getFeatureFlag('beta-feature', 'another_id', options)).toBe(false);
  expect(await client.isFeatureEnabled('beta-feature', 'another_id', options)).toBe(false);
  expect(await client.getFeatureFlag('multivariate-flag', 'example_id', options)).toBe('first-variant');
  expect(await client.getFeatureFlag('multivariate-flag', 'other_id', options)).toBe('third-variant');
  expect(await client.getFeatureFlag('staff', 'someone', { ...options, personProperties: { email: 'grace@PostHog.com' } })).toBe(true);
  expect(await client.getFeatureFlag('staff', 'someone', { ...options, personProperties: { email: 'grace@example.com' } })).toBe(false);
  expect(await client.getFeatureFlagPayload('multivariate-flag', 'example_id', undefined, options)).toEqual({ color: 'blue' });
  expect(await client.getAllFlags('other_id', { ...extra, personProperties: { email: 'x@posthog.com' } })).toEqual({
    'beta-feature': true,
    'multivariate-flag': 'third-variant',
    staff: true,
  });
}

describe.each(VERSIONS)('$name', ({ make, close }) => {
  test('remote evaluation', async () => {
    const client = make({ host: server.url, flushAt: 1, fetchRetryCount: 0 });
    try {
      await expectVectors(client, {});
    } finally {
      await close(client);
    }
  }, 30_000);

  test('local evaluation with the personal API key', async () => {
    const client = make({ host: server.url, personalApiKey: TEST_KEYS.personal, featureFlagsPollingInterval: 600_000, fetchRetryCount: 0 });
    try {
      const ready = client as unknown as { waitForLocalEvaluationReady?: (ms?: number) => Promise<boolean> };
      if (ready.waitForLocalEvaluationReady) expect(await ready.waitForLocalEvaluationReady(10_000)).toBe(true);
      else await client.reloadFeatureFlags();
      await expectVectors(client, { onlyEvaluateLocally: true });
    } finally {
      await close(client);
    }
  }, 30_000);
});
