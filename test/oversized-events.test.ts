import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { rm } from 'node:fs/promises';
import { TEST_KEYS, startServer, type ServerProcess } from './helpers/server-process';

/**
 * Events over the per-event limits (README "Limits"), over a real socket: the request is
 * answered 200 and the event dropped and counted (PostHog's ingestion warning), the rest of its
 * batch stored; events within the limits, however large, are stored and read back within
 * seconds; and nothing of it slows ordinary ingestion and queries for everyone else.
 */
let server: ServerProcess;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  if (server.proc.exitCode === null) await server.stop('SIGKILL');
  await rm(server.dataDir, { recursive: true, force: true });
});

const MB = 1024 * 1024;
const OK = { status: 200, body: '{"status":1}' };

async function batch(events: unknown[], timeoutMs = 30_000) {
  const res = await fetch(`${server.url}/batch/`, {
    method: 'POST',
    body: JSON.stringify({ api_key: TEST_KEYS.project, batch: events }),
    headers: { 'content-type': 'application/json' },
    signal: AbortSignal.timeout(timeoutMs),
  });
  return { status: res.status, body: await res.text() };
}

async function api(path: string, timeoutMs = 30_000) {
  const started = performance.now();
  const res = await fetch(server.url + path, { headers: { authorization: `Bearer ${TEST_KEYS.personal}` }, signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  return { status: res.status, text, ms: performance.now() - started };
}

const json = async (path: string) => JSON.parse((await api(path)).text);
const countOf = async (event: string) => (await json(`/api/projects/1/events/?event=${encodeURIComponent(event)}`)).count as number;

/** Wait until every request sent so far is stored: a sentinel sent after them is (processing and loads go in log order). */
async function settle() {
  const sentinel = `sentinel-${crypto.randomUUID()}`;
  expect(await batch([{ event: sentinel, distinct_id: 's' }])).toEqual(OK);
  for (const deadline = Date.now() + 60_000; (await countOf(sentinel)) !== 1; ) {
    if (Date.now() > deadline) throw new Error('the sentinel was not stored within 60 s');
    await Bun.sleep(50);
  }
}

/**
 * The project's listed definitions once `done` holds: they are written by a background flush a
 * second or so after the events they come from (later under load), not with the events.
 */
async function definitionsWhen(done: (team: { event_properties: string[]; person_properties: string[] }) => boolean) {
  for (const deadline = Date.now() + 30_000; ; ) {
    const team = (await json('/api/users/@me/')).team;
    if (done(team) || Date.now() > deadline) return team;
    await Bun.sleep(100);
  }
}

/** The time of one round of ordinary work: a small batch, then a page, a count and a select over it. */
async function ordinaryRound(tag: string): Promise<number> {
  const started = performance.now();
  const events = Array.from({ length: 50 }, (_, i) => ({ event: `ordinary-${tag}`, distinct_id: `o${i % 5}`, properties: { i, $browser: 'Firefox' } }));
  expect(await batch(events)).toEqual(OK);
  await settle();
  expect(await countOf(`ordinary-${tag}`)).toBe(50);
  const page = await json(`/api/projects/1/events/?limit=100`);
  expect(page.results.length).toBeGreaterThan(0);
  const select = await json(`/api/projects/1/events/?select=${encodeURIComponent('["event","count()"]')}`);
  expect(select.results.length).toBeGreaterThan(0);
  return performance.now() - started;
}

const props = (n: number, value: (i: number) => unknown = (i) => i) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, value(i)]));

describe('events over the per-event limits', () => {
  test('are answered 200 and dropped, counted; their batch neighbours and events within the limits are stored and read back within seconds', async () => {
    const before = await ordinaryRound('before');
    const run = crypto.randomUUID().slice(0, 8);
    const battery = [
      // Short keys: under 1 MB in all, so only the property count is over.
      { event: `too-many-properties-${run}`, distinct_id: 'big', properties: Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [i.toString(36), 0])) },
      { event: `huge-key-${run}`, distinct_id: 'big', properties: { ['k'.repeat(MB)]: 1 } },
      { event: `huge-value-${run}`, distinct_id: 'big', properties: { v: 'v'.repeat(MB) } },
      { event: `huge-multibyte-value-${run}`, distinct_id: 'big', properties: { v: 'é'.repeat(MB / 2 + 10) } },
      { event: `huge-set-${run}`, distinct_id: 'big', properties: { $set: props(20_000, () => 0) } },
    ];
    for (const e of battery) expect(await batch([{ event: `beside-${run}`, distinct_id: 'n' }, e, { event: `beside-${run}`, distinct_id: 'n' }])).toEqual(OK);
    // Within the limits, however large: stored whole.
    const largeValue = 'x'.repeat(MB - 4096);
    const manyProps = props(9_000, (i) => `value ${i}`);
    expect(await batch([{ event: `large-value-${run}`, distinct_id: 'big', uuid: '01890000-0000-7000-8000-000000000001', properties: { v: largeValue } }])).toEqual(OK);
    expect(await batch([{ event: `many-properties-${run}`, distinct_id: 'big', uuid: '01890000-0000-7000-8000-000000000002', properties: manyProps }])).toEqual(OK);

    await settle();
    for (const e of battery) expect(await countOf(e.event)).toBe(0);
    expect(await countOf(`beside-${run}`)).toBe(2 * battery.length);

    // Reads of the large stored events answer within seconds, whole.
    const retrieved = await api('/api/projects/1/events/01890000-0000-7000-8000-000000000001/');
    expect(retrieved.status).toBe(200);
    expect(JSON.parse(retrieved.text).properties.v).toBe(largeValue);
    expect(retrieved.ms).toBeLessThan(5_000);
    const many = JSON.parse((await api('/api/projects/1/events/01890000-0000-7000-8000-000000000002/')).text);
    expect(Object.keys(many.properties).filter((k) => k.startsWith('p')).length).toBe(9_000);
    for (const path of [
      '/api/projects/1/events/?limit=100',
      `/api/projects/1/events/?event=large-value-${run}&format=csv`,
      `/api/projects/1/events/?event=many-properties-${run}&format=json`,
      '/api/projects/1/events/?format=json&limit=20',
      '/api/projects/1/events/01890000-0000-7000-8000-000000000002/?format=csv',
    ]) {
      const read = await api(path);
      expect({ path, status: read.status }).toEqual({ path, status: 200 });
      expect(read.ms).toBeLessThan(5_000);
    }

    // Definitions: no key longer than 400 characters is listed; the 9,000 keys are.
    const team = await definitionsWhen((t) => t.event_properties.filter((k) => /^p\d+$/.test(k)).length >= 9_000);
    expect(team.event_properties.filter((k: string) => k.length > 400)).toEqual([]);
    expect(team.event_properties.filter((k: string) => /^p\d+$/.test(k)).length).toBe(9_000);
    expect(team.person_properties.filter((k: string) => /^p\d+$/.test(k)).length).toBe(0);

    // Everyone else: the same ordinary work as before answers within its usual time.
    const after = await ordinaryRound('after');
    expect(after).toBeLessThan(Math.max(3 * before, 2_000));

  }, 120_000);

  test('property definitions stop at 10,000 a project; the events keep every property', async () => {
    const run = crypto.randomUUID().slice(0, 8);
    for (let b = 0; b < 3; b++) {
      const events = Array.from({ length: 2 }, (_, e) => ({
        event: `keys-${run}`,
        distinct_id: 'k',
        properties: Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`${run}-${b}-${e}-${i}`, i])),
      }));
      expect(await batch(events)).toEqual(OK);
    }
    await settle();
    expect(await countOf(`keys-${run}`)).toBe(6);
    const listed = (await definitionsWhen((t) => t.event_properties.length >= 10_000)).event_properties as string[];
    expect(listed.length).toBe(10_000);
    const stored = await json(`/api/projects/1/events/?event=keys-${run}&limit=1`);
    expect(Object.keys(stored.results[0].properties).length).toBeGreaterThanOrEqual(2_000);
  }, 60_000);

  test('a list page of large events stops at 32 MiB and next continues: every event once, each page within seconds', async () => {
    const run = crypto.randomUUID().slice(0, 8);
    const v = 'x'.repeat(MB - 8192);
    for (let b = 0; b < 4; b++) {
      expect(await batch(Array.from({ length: 10 }, (_, i) => ({ event: `big-page-${run}`, distinct_id: `d${i}`, properties: { v, n: b * 10 + i } })))).toEqual(OK);
    }
    await settle();
    const seen: number[] = [];
    let path: string | null = `/api/projects/1/events/?event=big-page-${run}&limit=1000`;
    const sizes: number[] = [];
    while (path) {
      const read = await api(path);
      expect(read.status).toBe(200);
      expect(read.ms).toBeLessThan(5_000);
      const page = JSON.parse(read.text);
      expect(page.count).toBe(40);
      sizes.push(page.results.length);
      for (const e of page.results) {
        expect(e.properties.v.length).toBe(v.length);
        seen.push(e.properties.n);
      }
      path = page.next ? new URL(page.next).pathname + new URL(page.next).search : null;
    }
    expect(sizes).toEqual([33, 7]);
    expect(seen).toEqual(Array.from({ length: 40 }, (_, i) => 39 - i));
  }, 60_000);

  test('each drop is counted in a warning (PostHog: an ingestion warning), by reason', async () => {
    await server.stop();
    const log = await new Response(server.proc.stderr).text();
    const warnings = log.split('\n').filter((l) => l.includes('events dropped: over the per-event limits')).map((l) => JSON.parse(l));
    expect(warnings.map((w) => w.dropped)).toEqual([{ too_many_properties: 1 }, { event_too_large: 1 }, { event_too_large: 1 }, { event_too_large: 1 }, { too_many_properties: 1 }]);
    expect(warnings.at(-1)).toMatchObject({
      level: 'warn',
      teamId: 1,
      limits: { eventBytes: MB, propertiesPerEvent: 10_000, propertyDefinitionsPerProject: 10_000, eventPropertiesPerProject: 50_000, propertyNameLength: 400 },
    });
  }, 30_000);
});
