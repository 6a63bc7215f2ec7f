import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { uuidv7 } from '../../src/ids';
import { createTestApp, reopenTestApp, type TestApp } from '../helpers/test-app';

/**
 * Retention through the API, on a clock the test moves: old days go from Parquet and from the
 * hot table, new ones stay, and the events list, event definitions' volumes and cohorts agree,
 * also after a restart.
 */
const DAY = 86_400_000;
let clock = Date.parse('2026-03-20T12:00:00.000Z');
const now = () => new Date(clock);
let t: TestApp;

const event = (distinctId: string, day: string) => {
  const timestamp = `${day}T08:00:00.000Z`;
  return { event: 'seen', distinct_id: distinctId, timestamp, uuid: uuidv7(Date.parse(timestamp)), properties: { $set: { email: `${distinctId}@example.com` } } };
};
// old: 10 days before the clock starts; mid: 5 days; recent: yesterday.
const OLD_PARQUET = [event('old-a', '2026-03-10'), event('old-a', '2026-03-10'), event('old-a', '2026-03-10')];
const MID = [event('mid', '2026-03-15'), event('mid', '2026-03-15')];
const RECENT = [event('new', '2026-03-19'), event('new', '2026-03-19')];
const OLD_HOT = [event('old-b', '2026-03-10')];
const RECENT_HOT = [event('new', '2026-03-19')];

async function ingest(batch: unknown[]) {
  const res = await t.call('POST', '/batch/', { key: null, body: { api_key: t.account.project.apiToken, batch } });
  expect(res.status).toBe(200);
}

const listed = async () => {
  const res = await t.json('GET', `/api/projects/${t.account.project.id}/events/?after=2020-01-01T00:00:00Z&limit=1000`);
  expect(res.status).toBe(200);
  return (res.body.results as Array<{ id: string }>).map((e) => e.id).sort();
};
const ids = (events: Array<{ uuid: string }>) => events.map((e) => e.uuid).sort();

async function volume() {
  const res = await t.json('GET', `/api/projects/${t.account.project.id}/event_definitions/?search=seen`);
  return res.body.results[0].volume_30_day as number;
}

async function cohortCount() {
  const filters = { properties: { type: 'AND', values: [{ type: 'behavioral', value: 'performed_event', key: 'seen', event_type: 'events', time_value: 30, time_interval: 'day' }] } };
  const created = await t.json('POST', '/api/projects/@current/cohorts/', { body: { name: 'seen', filters } });
  await t.deps.storage.cohorts.whenIdle();
  return (await t.json('GET', `/api/projects/@current/cohorts/${created.body.id}/`)).body.count as number;
}

/** Background work runs on its own timers; the test moves the store's clock (retention's, and every age's). */
async function until(check: () => Promise<boolean>) {
  const deadline = Date.now() + 15_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('retention did not apply');
    await Bun.sleep(50);
  }
}

const parquetDays = async (dataDir: string, teamId: number, tier = 'parquet') => {
  const root = join(dataDir, 'events', tier, String(teamId));
  const out: string[] = [];
  for (const day of await readdir(root).catch(() => [] as string[])) if ((await readdir(join(root, day))).some((f) => f.endsWith('.parquet'))) out.push(day);
  return out.sort();
};

beforeAll(async () => {
  t = await createTestApp({}, now);
  await ingest([...OLD_PARQUET, ...MID, ...RECENT]);
  await t.deps.storage.events.compact();
  expect(await t.deps.storage.events.buildPersonCopies()).toBe(3);
  await ingest([...OLD_HOT, ...RECENT_HOT]);
  await t.deps.storage.events.flush();
  expect(t.deps.storage.events.stats().hotRows).toBe(2);
});
afterAll(() => t.close());

describe('events retention', () => {
  test('without a limit every event is kept', async () => {
    expect(await listed()).toEqual(ids([...OLD_PARQUET, ...MID, ...RECENT, ...OLD_HOT, ...RECENT_HOT]));
    expect(await volume()).toBe(9);
    expect(await cohortCount()).toBe(4);
  });

  test('a project limit drops whole older days from Parquet and the hot table soon after the change', async () => {
    const patched = await t.json('PATCH', `/api/projects/${t.account.project.id}/`, { body: { events_retention_days: 7 } });
    expect(patched.body.events_retention_days).toBe(7);
    const kept = ids([...MID, ...RECENT, ...RECENT_HOT]);
    await until(async () => (await listed()).length === kept.length);
    expect(await listed()).toEqual(kept);
    expect(await volume()).toBe(kept.length);
    expect(await cohortCount()).toBe(2);
    expect(t.deps.storage.events.stats()).toMatchObject({ expiredFiles: 1, expiredHotRows: 1, hotRows: 1 });
  });

  test('as the clock moves on, the hourly run drops the days that aged out; new events stay', async () => {
    clock += 3 * DAY + 2 * 3_600_000; // 2026-03-23T14:00: the first day kept is 03-16
    const fresh = [event('new', '2026-03-23')];
    await ingest(fresh);
    const kept = ids([...RECENT, ...RECENT_HOT, ...fresh]);
    await until(async () => (await listed()).length === kept.length);
    expect(await listed()).toEqual(kept);
    expect(await volume()).toBe(kept.length);
    expect(await cohortCount()).toBe(1);
  });

  test('after a restart the dropped days stay gone, their files too', async () => {
    t = await reopenTestApp(t, {}, now);
    const kept = ids([...RECENT, ...RECENT_HOT, event('new', '2026-03-23')]).length;
    expect((await listed()).length).toBe(kept);
    expect(await volume()).toBe(kept);
    // Three days on, the hot rows were old enough to compact: the new event's day is in Parquet
    // once a tick has done so, which it may not have before the restart.
    expect((await parquetDays(t.dataDir, t.account.project.id)).filter((day) => day !== '2026-03-23')).toEqual(['2026-03-19']);
    expect(await parquetDays(t.dataDir, t.account.project.id, 'by-person')).toEqual(['2026-03-19']);
  });
});

describe('the server default', () => {
  test('EVENTS_RETENTION_DAYS applies at start to projects without a setting of their own, not to those with null', async () => {
    const d = await createTestApp({ EVENTS_RETENTION_DAYS: '3' }, now);
    try {
      const other = await d.deps.storage.management.createProject(d.account.organization.id, 'Keeps everything', { events_retention_days: null });
      const old = event('someone', new Date(clock - 10 * DAY).toISOString().slice(0, 10));
      for (const token of [d.account.project.apiToken, other.apiToken]) {
        const res = await d.call('POST', '/batch/', { key: null, body: { api_key: token, batch: [{ ...old, uuid: uuidv7() }] } });
        expect(res.status).toBe(200);
      }
      await d.deps.storage.events.compact();
      const count = async (project: number) => (await d.json('GET', `/api/projects/${project}/events/?after=2020-01-01T00:00:00Z`)).body.results.length;
      expect(await count(other.id)).toBe(1);
      // Retention ran at start (nothing to drop then) and is next due in an hour of the clock.
      clock += 3_600_000;
      const deadline = Date.now() + 15_000;
      while ((await count(d.account.project.id)) !== 0 && Date.now() < deadline) await Bun.sleep(50);
      expect(await count(d.account.project.id)).toBe(0);
      expect(await count(other.id)).toBe(1);
    } finally {
      await d.close();
    }
  });
});
