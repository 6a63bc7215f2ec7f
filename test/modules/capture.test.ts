import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { gzipSync } from 'node:zlib';
import { decodePayload } from '../../src/core/ingest/decode-payload';
import { extractEvents } from '../../src/core/ingest/extract-events';
import { normalizeEvent, type NormalizedEvent } from '../../src/core/ingest/normalize-event';
import { fixtureRequest, listSdkFixtures, loadSdkFixture, fixtureBody } from '../fixtures/sdk';
import { BASE, createTestApp, errorOf, type TestApp } from '../helpers/test-app';

/** Real SDK requests (recorded, test/fixtures/sdk) through the real app, read back through the events API. */
const TOKEN = 'phc_fixture_token_0123456789abcdefghijklmnopqrstuv';
const NOW = new Date('2026-11-22T06:06:00.000Z');
const IP = '203.0.113.7';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ BOOTSTRAP_PROJECT_API_KEY: TOKEN }, () => NOW);
});
afterAll(() => t.close());

const EVENT_FIXTURES = listSdkFixtures().filter((name) => {
  const f = loadSdkFixture(name);
  return !f.path.startsWith('/flags') && !f.path.startsWith('/decide');
});

/** The API's timestamp form: Python's `isoformat()` (microseconds unless zero) with +00:00. */
const apiTime = (ms: number) => {
  const iso = new Date(ms).toISOString();
  return ms % 1000 === 0 ? iso.replace('.000Z', '+00:00') : iso.replace('Z', '000+00:00');
};

/** What the pure pipeline makes of a fixture: the stored rows must be exactly these. */
function expectedEvents(name: string): NormalizedEvent[] {
  const f = loadSdkFixture(name);
  const decoded = decodePayload({
    body: fixtureBody(f),
    contentType: f.headers['content-type'],
    contentEncoding: f.headers['content-encoding'],
    query: new URLSearchParams(f.query),
    maxBytes: 20 * 1024 * 1024,
  });
  const extracted = extractEvents(decoded.payload, { hints: decoded.hints });
  const ctx = { now: NOW, sentAt: extracted.sentAt === null ? null : new Date(extracted.sentAt), ip: IP, anonymizeIps: false, newUuid: () => 'unused' };
  return extracted.events.map((raw) => normalizeEvent(raw, ctx)).flatMap((r) => ('ok' in r ? [r.ok] : []));
}

/** The success answer: 200 `{"status":1}`, or 204 without a body for sendBeacon (`beacon=1`), as PostHog's capture answers. */
const answered = (query: string) => (new URLSearchParams(query).get('beacon') === '1' ? { status: 204, text: '' } : { status: 200, text: '{"status":1}' });

async function send(request: Request, app: TestApp = t) {
  const headers = new Headers(request.headers);
  headers.set('x-forwarded-for', `${IP}:5555, 10.0.0.1`);
  const res = await app.app.handle(new Request(request, { headers }));
  return { status: res.status, text: await res.text(), headers: res.headers };
}

async function storedByUuid(uuid: string, app: TestApp = t) {
  const res = await app.json('GET', `/api/projects/${app.account.project.id}/events/${uuid}/?include_person=true`);
  return res.status === 200 ? res.body : null;
}

describe('real SDK payloads through every decoding path', () => {
  // Each fixture in a fresh store: the constructed posthog-js fixtures share uuids, which dedupe.
  test.each(EVENT_FIXTURES)('%s is answered as PostHog answers it (200 {"status":1}; 204 for beacon=1) and stored exactly', async (name) => {
    const own = await createTestApp({ BOOTSTRAP_PROJECT_API_KEY: TOKEN }, () => NOW);
    try {
      await checkFixture(own, name);
    } finally {
      await own.close();
    }
  });

  async function checkFixture(t: TestApp, name: string) {
    const fixture = loadSdkFixture(name);
    const expected = expectedEvents(name);
    expect(expected.length).toBeGreaterThan(0);
    const res = await send(fixtureRequest(fixture, BASE), t);
    expect(res).toMatchObject(answered(fixture.query));
    for (const e of expected.filter((x) => x.uuid !== 'unused')) {
      const stored = await storedByUuid(e.uuid, t);
      expect(stored).toEqual({
        id: e.uuid,
        distinct_id: e.distinctId,
        properties: e.properties,
        event: e.event,
        timestamp: apiTime(e.timestamp),
        // A personless event ($process_person_profile: false) of an id with no person has none.
        person: e.processPerson ? expect.objectContaining({ distinct_ids: expect.any(Array), properties: expect.any(Object) }) : stored.person,
        elements: expect.any(Array),
        elements_chain: e.elementsChain,
      });
      expect(stored.properties.$ip).toBe(IP);
    }
    const generated = expected.filter((x) => x.uuid === 'unused');
    for (const e of generated) {
      const list = await t.json('GET', `/api/projects/${t.account.project.id}/events/?event=${encodeURIComponent(e.event)}&distinct_id=${encodeURIComponent(e.distinctId)}`);
      expect(list.body.results.length).toBeGreaterThanOrEqual(1);
      expect(list.body.results[0].properties).toEqual(e.properties);
    }
  }

  test('replaying every request (an SDK retry) creates no duplicate', async () => {
    for (const name of EVENT_FIXTURES) expect((await send(fixtureRequest(loadSdkFixture(name), BASE))).status).toBe(answered(loadSdkFixture(name).query).status);
    const before = (await t.json('GET', `/api/projects/${t.account.project.id}/events/?limit=1`)).body.count;
    const withUuids = EVENT_FIXTURES.filter((n) => expectedEvents(n).every((e) => e.uuid !== 'unused'));
    for (const name of withUuids) expect((await send(fixtureRequest(loadSdkFixture(name), BASE))).status).toBe(answered(loadSdkFixture(name).query).status);
    const after = (await t.json('GET', `/api/projects/${t.account.project.id}/events/?limit=1`)).body.count;
    expect(after).toBe(before);
  });

  test('identify and alias from the SDKs merged persons as PostHog does', async () => {
    const identify = expectedEvents('node5-2-identify').find((e) => e.event === '$identify')!;
    const stored = await storedByUuid(identify.uuid);
    expect(stored.person.is_identified).toBe(true);
    expect(stored.person.properties).toEqual(expect.objectContaining(Object.fromEntries(Object.entries(identify.set).filter(([k]) => ['email', 'name', 'username'].includes(k)))));
    const alias = expectedEvents('node5-3-alias').find((e) => e.event === '$create_alias')!;
    const person = t.deps.storage.persons.findByDistinctId(t.account.project.id, alias.distinctId)!;
    expect(person.distinctIds).toContain(alias.alias!);
    expect(t.deps.storage.persons.findByDistinctId(t.account.project.id, alias.alias!)!.uuid).toBe(person.uuid);
  });
});

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  t.app.handle(
    new Request(BASE + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body),
    }),
  );

const bodyOf = async (res: Response) => ({ status: res.status, body: JSON.parse(await res.text()) });

describe("the spec's error table", () => {
  const AUTH = 'authentication_error';
  test.each([
    ['unknown project key', { api_key: 'phc_nope', event: 'x', distinct_id: 'd' }, 401, errorOf('invalid_api_key', AUTH, 'Project API key invalid. You can find your project API key in PostHog project settings.')],
    ['invalid personal key', { api_key: 'phx_nope', event: 'x', distinct_id: 'd' }, 401, errorOf('invalid_personal_api_key', AUTH, 'Invalid Personal API key.')],
    ['no key', { event: 'x', distinct_id: 'd' }, 401, errorOf('missing_api_key', AUTH, 'API key not provided. You can find your project API key in PostHog project settings.')],
    ['personal key, no project', { api_key: 'PERSONAL', event: 'x', distinct_id: 'd' }, 400, errorOf('invalid_project', 'validation_error', 'Invalid Project ID.', 'project_id')],
    ['personal key, unknown project', { api_key: 'PERSONAL', project_id: 999, event: 'x', distinct_id: 'd' }, 400, errorOf('invalid_project', 'validation_error', 'Invalid Project ID.', 'project_id')],
  ])('%s', async (_, payload, status, body) => {
    const p = JSON.parse(JSON.stringify(payload).replace('PERSONAL', t.account.personalApiKey.value));
    for (const path of ['/capture/', '/batch/', '/e']) {
      const res = await bodyOf(await post(path, p));
      expect(res).toEqual({ status, body });
    }
  });

  test('a personal key with the project id stores into that project', async () => {
    const res = await post('/capture/', { api_key: t.account.personalApiKey.value, project_id: t.account.project.id, event: 'via-personal-key', distinct_id: 'pk-1' });
    expect(await bodyOf(res)).toEqual({ status: 200, body: { status: 1 } });
    const list = await t.json('GET', `/api/projects/${t.account.project.id}/events/?event=via-personal-key`);
    expect(list.body.results.map((e: { distinct_id: string }) => e.distinct_id)).toEqual(['pk-1']);
  });

  test.each([
    ['malformed JSON', '{"api_key": "x", ', {}],
    ['broken gzip', new Uint8Array([0x1f, 0x8b, 8, 0, 1, 2, 3]), { 'content-encoding': 'gzip' }],
    ['invalid UTF-8', new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]), {}],
  ])('%s is a 400 invalid_payload and stores nothing', async (_, body, headers) => {
    const before = (await t.json('GET', `/api/projects/${t.account.project.id}/events/?limit=1`)).body.count;
    const res = await bodyOf(await post('/batch/', body as string, headers));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ type: 'validation_error', code: 'invalid_payload', detail: expect.stringMatching(/^Malformed request data: /), attr: null });
    expect((await t.json('GET', `/api/projects/${t.account.project.id}/events/?limit=1`)).body.count).toBe(before);
  });
});

describe('validation and normalization', () => {
  test('events without a name or distinct id are dropped; the rest of the batch is stored with 200', async () => {
    const res = await post('/batch/', {
      api_key: TOKEN,
      batch: [
        { event: 'kept-1', distinct_id: 'v1' },
        { event: '', distinct_id: 'v1' },
        { event: 'no-id' },
        { event: 'blank-id', distinct_id: '   ' },
        { event: 'kept-2', properties: { distinct_id: 42 } },
        { event: 'kept-3', $distinct_id: 'v3', distinct_id: 'ignored' },
      ],
    });
    expect(await bodyOf(res)).toEqual({ status: 200, body: { status: 1 } });
    const got = async (event: string) => (await t.json('GET', `/api/projects/${t.account.project.id}/events/?event=${event}`)).body.results.map((e: any) => e.distinct_id);
    expect(await got('kept-1')).toEqual(['v1']);
    expect(await got('kept-2')).toEqual(['42']);
    expect(await got('kept-3')).toEqual(['v3']);
    expect(await got('no-id')).toEqual([]);
    expect(await got('blank-id')).toEqual([]);
  });

  test('distinct ids and event names are cut to 200 characters', async () => {
    await post('/capture/', { api_key: TOKEN, event: 'n'.repeat(250), distinct_id: 'd'.repeat(250) });
    const list = await t.json('GET', `/api/projects/${t.account.project.id}/events/?event=${'n'.repeat(200)}`);
    expect(list.body.results.map((e: any) => e.distinct_id)).toEqual(['d'.repeat(200)]);
  });

  test('an event at the size limit made almost wholly of its $session_id is stored whole (its row holds the value twice, in its properties and its session column: a line longer than the default cap of DuckDB, 2,000,000 bytes)', async () => {
    const event = 'long-session';
    const distinctId = 'long-session-user';
    // The per-event limit counts the stored properties ($ip added), the name and the distinct id: this event is exactly at it.
    const value = 's'.repeat(1024 * 1024 - JSON.stringify({ $session_id: '', $ip: IP }).length - event.length - distinctId.length);
    const uuid = '01890000-0000-7000-8000-0000000005e5';
    const res = await post('/capture/', { api_key: TOKEN, event, distinct_id: distinctId, uuid, properties: { $session_id: value } }, { 'x-forwarded-for': IP });
    expect(await bodyOf(res)).toEqual({ status: 200, body: { status: 1 } });
    const stored = await t.json('GET', `/api/projects/${t.account.project.id}/events/${uuid}/`);
    expect(stored.status).toBe(200);
    expect(stored.body.properties).toEqual({ $session_id: value, $ip: IP });
    const selected = await t.json('GET', `/api/projects/${t.account.project.id}/events/?event=${event}&select=${encodeURIComponent(JSON.stringify(['length(properties.$session_id)']))}`);
    expect(selected.body.results).toEqual([[value.length]]);
  });

  test("the spec's sample forms keep everything they carry", async () => {
    const samples = [
      { type: 'alias', event: '$create_alias', properties: { distinct_id: 'sample-user', alias: 'sample-alias' }, context: { ip: '1.1.1.1' }, messageId: 'm1' },
      { type: 'capture', event: '$event', distinct_id: 'sample-user', properties: { p: 1 }, context: {}, messageId: 'm2' },
      { type: 'identify', event: '$identify', distinct_id: 'sample-user', $set: { email: 's@example.com' }, context: 'ctx', messageId: 'm3' },
      { type: 'page', event: '$page', distinct_id: 'sample-user', name: 'Home', category: 'Docs', properties: {}, messageId: 'm4' },
      { type: 'screen', event: '$screen', distinct_id: 'sample-user', name: 'Settings', category: 'App', properties: {}, messageId: 'm5' },
    ];
    for (const s of samples) expect((await post('/capture/', { api_key: TOKEN, ...s })).status).toBe(200);
    const stored = async (event: string) => (await t.json('GET', `/api/projects/${t.account.project.id}/events/?event=${encodeURIComponent(event)}`)).body.results[0].properties;
    expect(await stored('$create_alias')).toMatchObject({ $type: 'alias', alias: 'sample-alias', $context: { ip: '1.1.1.1' }, $message_id: 'm1' });
    expect(await stored('$event')).toMatchObject({ $type: 'capture', p: 1, $message_id: 'm2' });
    expect(await stored('$identify')).toMatchObject({ $type: 'identify', $context: 'ctx', $set: { email: 's@example.com' }, $message_id: 'm3' });
    expect(await stored('$page')).toMatchObject({ $type: 'page', $name: 'Home', $category: 'Docs', $message_id: 'm4' });
    expect(await stored('$screen')).toMatchObject({ $type: 'screen', $name: 'Settings', $category: 'App', $message_id: 'm5' });
    expect(t.deps.storage.persons.findByDistinctId(t.account.project.id, 'sample-alias')!.uuid).toBe(
      t.deps.storage.persons.findByDistinctId(t.account.project.id, 'sample-user')!.uuid,
    );
  });

  test('anonymize_ips keeps $ip out', async () => {
    const other = await t.json('POST', '/api/projects/', { body: { name: 'Private', anonymize_ips: true } });
    await post('/capture/', { api_key: other.body.api_token, event: 'private', distinct_id: 'p1', properties: { $ip: '9.9.9.9' } }, { 'x-forwarded-for': '8.8.8.8' });
    const list = await t.json('GET', `/api/projects/${other.body.id}/events/?event=private`);
    expect(list.body.results).toHaveLength(1);
    expect(list.body.results[0].properties.$ip).toBeUndefined();
  });

  test('a client timestamp is corrected for clock skew; one too far in the future is clamped to now', async () => {
    const sentAt = new Date(NOW.getTime() - 60_000).toISOString(); // the client's clock is a minute behind
    await post('/batch/', {
      api_key: TOKEN,
      sent_at: sentAt,
      batch: [
        { event: 'skewed', distinct_id: 's1', timestamp: new Date(NOW.getTime() - 70_000).toISOString() },
        { event: 'future', distinct_id: 's1', timestamp: new Date(NOW.getTime() + 48 * 3600_000).toISOString(), properties: { $ignore_sent_at: true } },
        { event: 'untimed', distinct_id: 's1' },
      ],
    });
    const time = async (event: string) => (await t.json('GET', `/api/projects/${t.account.project.id}/events/?event=${event}&before=2030-01-01T00:00:00Z`)).body.results[0].timestamp;
    expect(await time('skewed')).toBe(apiTime(NOW.getTime() - 10_000));
    expect(await time('future')).toBe(apiTime(NOW.getTime()));
    expect(await time('untimed')).toBe(apiTime(NOW.getTime()));
  });
});

describe('HTTP details', () => {
  test('CORS: the origin is echoed with credentials, on success and on errors; OPTIONS preflight answers 200', async () => {
    const origin = { origin: 'https://app.example.com' };
    const ok = await post('/e/', { api_key: TOKEN, event: 'cors', distinct_id: 'c' }, origin);
    const bad = await post('/e/', { api_key: 'phc_nope', event: 'cors', distinct_id: 'c' }, origin);
    for (const res of [ok, bad]) {
      expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
      expect(res.headers.get('access-control-allow-credentials')).toBe('true');
    }
    const pre = await t.app.handle(
      new Request(`${BASE}/i/v0/e/`, { method: 'OPTIONS', headers: { ...origin, 'access-control-request-headers': 'content-type,traceparent,x-evil' } }),
    );
    expect(pre.status).toBe(200);
    expect(await pre.text()).toBe('{"status":1}');
    expect(pre.headers.get('access-control-allow-methods')).toBe('GET, POST, OPTIONS');
    expect(pre.headers.get('access-control-allow-headers')).toBe('X-Requested-With,Content-Type,traceparent');
  });

  test.each(['/capture', '/batch', '/e', '/i/v0/e', '/track', '/engage'])('%s answers with and without the trailing slash, POST and GET data=', async (path) => {
    const event = { api_key: TOKEN, event: `route${path}`, distinct_id: 'r' };
    for (const p of [path, `${path}/`]) expect((await post(p, event)).status).toBe(200);
    const data = Buffer.from(JSON.stringify(event)).toString('base64').replace(/=+$/, '');
    const get = await t.app.handle(new Request(`${BASE}${path}/?data=${encodeURIComponent(data)}`));
    expect(get.status).toBe(200);
    const list = await t.json('GET', `/api/projects/${t.account.project.id}/events/?event=${encodeURIComponent(`route${path}`)}`);
    expect(list.body.count).toBe(3);
  });

  test('gzip without any hint (posthog-js sends it as text/plain) and with ?compression=gzip-js', async () => {
    const body = gzipSync(JSON.stringify([{ api_key: TOKEN, event: 'gz-nohint', distinct_id: 'g' }]));
    expect((await post('/e/', new Uint8Array(body), { 'content-type': 'text/plain' })).status).toBe(200);
    const body2 = gzipSync(JSON.stringify({ api_key: TOKEN, event: 'gz-js', distinct_id: 'g' }));
    expect((await post('/e/?compression=gzip-js', new Uint8Array(body2), { 'content-type': 'text/plain' })).status).toBe(200);
    for (const e of ['gz-nohint', 'gz-js']) expect((await t.json('GET', `/api/projects/${t.account.project.id}/events/?event=${e}`)).body.count).toBe(1);
  });

  test('the first event marks the project ingested and creates event definitions', async () => {
    const fresh = await t.json('POST', '/api/projects/', { body: { name: 'Fresh' } });
    expect(fresh.body.ingested_event).toBe(false);
    await post('/capture/', { api_key: fresh.body.api_token, event: 'first-ever', distinct_id: 'f', properties: { amount: 3 } });
    await t.deps.storage.events.awaitIntake(null, null); // processed behind the 200, within milliseconds
    await t.deps.storage.seen.flush();
    expect((await t.json('GET', `/api/projects/${fresh.body.id}/`)).body.ingested_event).toBe(true);
    const defs = await t.json('GET', `/api/projects/${fresh.body.id}/event_definitions/`);
    expect(defs.body.results.map((d: { name: string }) => d.name)).toEqual(['first-ever']);
    const me = await t.json('GET', '/api/users/@me/');
    expect(me.body.team.event_names).toContain('$pageview');
  });
});
