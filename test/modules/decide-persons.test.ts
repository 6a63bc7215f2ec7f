import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { hashFlag } from '../../src/core/flags/rollout-hash';
import type { PersonEvent } from '../../src/core/ingest/person-updates';
import { createTestApp, type TestApp } from '../helpers/test-app';
import { personEvent } from '../helpers/person-event';

/**
 * Flags that read stored data: person properties, groups, continuity hash keys, cohorts. Persons
 * are made the way ingestion makes them (the person store's `processEvent`).
 */

let t: TestApp;
let token: string;
let teamId: number;
let n = 0;

function ingest(event: string, distinctId: string, extra: Partial<PersonEvent> = {}) {
  t.deps.storage.persons.processEvent(
    teamId,
    personEvent({ uuid: `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`, event, distinctId, timestamp: Date.now(), ...extra }),
  );
}

const createFlag = async (body: Record<string, unknown>) => {
  const res = await t.json('POST', '/api/projects/@current/feature_flags/', { body });
  expect(res.status).toBe(201);
  return res.body as { id: number };
};

/** `/flags/?v=2` answer for one flag: its value, and the reason code. */
async function check(key: string, body: Record<string, unknown>) {
  const res = await t.json('POST', '/flags/?v=2', { key: null, body: { token, ...body } });
  expect(res.status).toBe(200);
  const flag = res.body.flags[key];
  return flag ? { value: flag.enabled ? (flag.variant ?? true) : false, reason: flag.reason.code } : undefined;
}

beforeAll(async () => {
  t = await createTestApp();
  token = t.account.project.apiToken;
  teamId = t.account.project.id;
  await t.deps.storage.persons.ensureLoaded(teamId);
  ingest('$identify', 'ada', { set: { email: 'ada@posthog.com', plan: 'pro', age: 36 } });
  ingest('$identify', 'bob', { set: { email: 'bob@example.com', plan: 'free', age: 17 } });
  ingest('$groupidentify', 'ada', { properties: { $group_type: 'company', $group_key: 'acme', $group_set: { name: 'Acme Inc', seats: 50 } } });
  ingest('$groupidentify', 'ada', { properties: { $group_type: 'company', $group_key: 'tiny', $group_set: { name: 'Tiny', seats: 2 } } });
});
afterAll(() => t.close());

describe('person properties', () => {
  beforeAll(async () => {
    await createFlag({
      key: 'staff',
      filters: { groups: [{ properties: [{ key: 'email', type: 'person', value: '@posthog.com', operator: 'icontains' }], rollout_percentage: null }] },
    });
    await createFlag({
      key: 'grown-up-pro',
      filters: {
        groups: [
          {
            properties: [
              { key: 'age', type: 'person', value: '18', operator: 'gte' },
              { key: 'plan', type: 'person', value: ['pro', 'enterprise'], operator: 'exact' },
            ],
          },
        ],
      },
    });
    await createFlag({ key: 'no-plan', filters: { groups: [{ properties: [{ key: 'plan', type: 'person', operator: 'is_not_set', value: 'is_not_set' }] }] } });
  });

  test.each([
    ['staff', 'ada', {}, { value: true, reason: 'condition_match' }],
    ['staff', 'bob', {}, { value: false, reason: 'no_condition_match' }],
    ['staff', 'unknown-person', {}, { value: false, reason: 'no_condition_match' }],
    // The request's person_properties go over the stored ones.
    ['staff', 'bob', { email: 'bob@posthog.com' }, { value: true, reason: 'condition_match' }],
    ['staff', 'unknown-person', { email: 'x@POSTHOG.com' }, { value: true, reason: 'condition_match' }],
    ['grown-up-pro', 'ada', {}, { value: true, reason: 'condition_match' }],
    ['grown-up-pro', 'ada', { age: 12 }, { value: false, reason: 'no_condition_match' }],
    ['grown-up-pro', 'bob', { plan: 'Enterprise' }, { value: false, reason: 'no_condition_match' }],
    ['grown-up-pro', 'bob', { plan: 'Enterprise', age: '40' }, { value: true, reason: 'condition_match' }],
    ['no-plan', 'unknown-person', {}, { value: true, reason: 'condition_match' }],
    ['no-plan', 'ada', {}, { value: false, reason: 'no_condition_match' }],
  ])('%s for %s with %j', async (key, distinctId, personProperties, expected) => {
    expect(await check(key, { distinct_id: distinctId, person_properties: personProperties })).toEqual(expected);
  });

  test('a change to the stored person is seen by the next check', async () => {
    expect(await check('staff', { distinct_id: 'carol' })).toEqual({ value: false, reason: 'no_condition_match' });
    ingest('$identify', 'carol', { set: { email: 'carol@posthog.com' } });
    expect(await check('staff', { distinct_id: 'carol' })).toEqual({ value: true, reason: 'condition_match' });
    ingest('$set', 'carol', { set: { email: 'carol@elsewhere.org' } });
    expect(await check('staff', { distinct_id: 'carol' })).toEqual({ value: false, reason: 'no_condition_match' });
  });

  test('decide v1/v2 list person flags like the others', async () => {
    const res = await t.json('POST', '/decide/?v=2', { key: null, body: { token, distinct_id: 'ada' } });
    expect(res.body.featureFlags).toEqual({ staff: true, 'grown-up-pro': true });
  });
});

describe('groups', () => {
  beforeAll(async () => {
    await createFlag({
      key: 'big-companies',
      filters: {
        aggregation_group_type_index: 0,
        groups: [{ properties: [{ key: 'seats', type: 'group', group_type_index: 0, value: '10', operator: 'gt' }], rollout_percentage: null }],
      },
    });
  });

  test.each([
    [{ company: 'acme' }, {}, { value: true, reason: 'condition_match' }],
    [{ company: 'tiny' }, {}, { value: false, reason: 'no_condition_match' }],
    [{ company: 'tiny' }, { company: { seats: 500 } }, { value: true, reason: 'condition_match' }],
    [{}, {}, { value: false, reason: 'no_group_type' }],
  ])('groups %j, group_properties %j', async (groups, groupProperties, expected) => {
    expect(await check('big-companies', { distinct_id: 'ada', groups, group_properties: groupProperties })).toEqual(expected);
  });
});

describe('experience continuity', () => {
  const KEY = 'sticky';
  /** An anonymous id and a user id on opposite sides of a 50 % rollout. */
  const pair = () => {
    for (let i = 0; ; i++) {
      const anon = `anon-${i}`;
      const user = `user-${i}`;
      if ((hashFlag(KEY, anon) <= 0.5) !== (hashFlag(KEY, user) <= 0.5)) return { anon, user, anonIn: hashFlag(KEY, anon) <= 0.5 };
    }
  };

  test('$anon_distinct_id pins the flag to the anonymous id, stored for the person', async () => {
    await createFlag({ key: KEY, ensure_experience_continuity: true, filters: { groups: [{ properties: [], rollout_percentage: 50 }] } });
    const { anon, user, anonIn } = pair();
    const anonymousAnswer = await check(KEY, { distinct_id: anon });
    expect(anonymousAnswer?.value).toBe(anonIn);

    ingest('$identify', user, { anonDistinctId: anon, set: { email: `${user}@example.com` } });
    const identified = await check(KEY, { distinct_id: user, $anon_distinct_id: anon });
    expect(identified?.value).toBe(anonIn);

    const person = t.deps.storage.persons.findByDistinctId(teamId, user)!;
    const overrides = await t.deps.storage.flags.hashKeyOverrides(teamId);
    expect(overrides.get(person.uuid)).toEqual({ [KEY]: anon });
    // Later checks without the anonymous id keep the stored hash key.
    expect((await check(KEY, { distinct_id: user }))?.value).toBe(anonIn);
    // A new anonymous id does not replace it.
    expect((await check(KEY, { distinct_id: user, $anon_distinct_id: 'another-anon' }))?.value).toBe(anonIn);
    expect((await t.deps.storage.flags.hashKeyOverrides(teamId)).get(person.uuid)).toEqual({ [KEY]: anon });
  });
});

describe('cohorts', () => {
  test('a dynamic cohort is decided from the person’s properties; a static one by membership', async () => {
    const pro = await t.json('POST', '/api/projects/@current/cohorts/', {
      body: {
        name: 'Pro',
        filters: { properties: { type: 'OR', values: [{ type: 'AND', values: [{ key: 'plan', type: 'person', value: 'pro', operator: 'exact' }] }] } },
      },
    });
    expect(pro.status).toBe(201);
    await createFlag({ key: 'pro-cohort', filters: { groups: [{ properties: [{ key: 'id', type: 'cohort', value: pro.body.id }] }] } });
    expect(await check('pro-cohort', { distinct_id: 'ada' })).toEqual({ value: true, reason: 'condition_match' });
    expect(await check('pro-cohort', { distinct_id: 'bob' })).toEqual({ value: false, reason: 'no_condition_match' });

    const listed = await t.json('POST', '/api/projects/@current/cohorts/', { body: { name: 'Listed', is_static: true } });
    await t.deps.storage.persons.flush();
    const bob = t.deps.storage.persons.findByDistinctId(teamId, 'bob')!;
    const added = await t.json('PATCH', `/api/projects/@current/cohorts/${listed.body.id}/add_persons_to_static_cohort/`, { body: { person_ids: [bob.uuid] } });
    expect(added.status).toBe(200);
    await createFlag({ key: 'listed', filters: { groups: [{ properties: [{ key: 'id', type: 'cohort', value: listed.body.id }] }] } });
    expect(await check('listed', { distinct_id: 'bob' })).toEqual({ value: true, reason: 'condition_match' });
    expect(await check('listed', { distinct_id: 'ada' })).toEqual({ value: false, reason: 'no_condition_match' });
  });
});

describe('the clock', () => {
  test('relative dates are judged at each check’s time (never remembered)', async () => {
    let now = new Date('2024-06-10T12:00:00Z');
    const app = await createTestApp({}, () => now);
    try {
      const res = await app.json('POST', '/api/projects/@current/feature_flags/', {
        body: { key: 'recent', filters: { groups: [{ properties: [{ key: 'joined', type: 'person', value: '-7d', operator: 'is_date_after' }] }] } },
      });
      expect(res.status).toBe(201);
      const ask = async () =>
        (await app.json('POST', '/decide/?v=2', { key: null, body: { token: app.account.project.apiToken, distinct_id: 'x', person_properties: { joined: '2024-06-08' } } }))
          .body.featureFlags;
      expect(await ask()).toEqual({ recent: true });
      now = new Date('2024-06-20T12:00:00Z');
      expect(await ask()).toEqual({});
    } finally {
      await app.close();
    }
  });
});

describe('flag dependencies', () => {
  test('a flag that depends on another is evaluated with it, also when only it is asked for', async () => {
    const base = await createFlag({ key: 'dep-base', filters: { groups: [{ properties: [{ key: 'plan', type: 'person', value: 'pro', operator: 'exact' }] }] } });
    await createFlag({
      key: 'dep-child',
      filters: { groups: [{ properties: [{ key: String(base.id), type: 'flag', value: true, operator: 'flag_evaluates_to' }] }] },
    });
    expect(await check('dep-child', { distinct_id: 'ada' })).toEqual({ value: true, reason: 'condition_match' });
    expect(await check('dep-child', { distinct_id: 'bob' })).toEqual({ value: false, reason: 'no_condition_match' });
    const only = await t.json('POST', '/flags/?v=2', { key: null, body: { token, distinct_id: 'ada', flag_keys_to_evaluate: ['dep-child'] } });
    expect(Object.keys(only.body.flags)).toEqual(['dep-child']);
    expect(only.body.flags['dep-child'].enabled).toBe(true);
  });
});

describe('persons changed by events still being processed', () => {
  test('a flag check waits for the capture requests naming its user, then sees their $set', async () => {
    await createFlag({ key: 'fresh-pro', filters: { groups: [{ properties: [{ key: 'plan', type: 'person', value: 'pro', operator: 'exact' }], rollout_percentage: 100 }] } });
    // Hold processing back: the capture is acknowledged (durable) but its events wait.
    const processor = (t.deps.storage.events as unknown as { processor: { process: (...a: unknown[]) => Promise<unknown> } }).processor;
    const original = processor.process;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    processor.process = async (...args: unknown[]) => {
      await gate;
      return original(...args);
    };
    try {
      const captured = await t.call('POST', '/capture/', { key: null, body: { api_key: token, event: '$identify', distinct_id: 'erin', properties: { $set: { plan: 'pro' } } } });
      expect(captured.status).toBe(200);
      expect(t.deps.storage.persons.findByDistinctId(teamId, 'erin')).toBeNull();
      setTimeout(release, 50);
      expect(await check('fresh-pro', { distinct_id: 'erin' })).toEqual({ value: true, reason: 'condition_match' });
      // Another user's check never waits on erin's events.
      expect(t.deps.storage.events.intakePending(teamId, ['dave'])).toBe(false);
    } finally {
      processor.process = original;
      release();
    }
  });
});
