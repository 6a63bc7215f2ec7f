import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { rm } from 'node:fs/promises';
import { listDeadLetters } from '../src/storage';
import { TEST_KEYS, startServer, type ServerProcess } from './helpers/server-process';

/**
 * Bad input over a real socket (the server's parser thread takes the large capture bodies):
 * what is refused is refused whole, quickly, and what is answered 200 is stored whole.
 */
let server: ServerProcess;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.stop();
  await rm(server.dataDir, { recursive: true, force: true });
});

const post = async (path: string, body: string | Uint8Array, headers: Record<string, string> = { 'content-type': 'application/json' }) => {
  const res = await fetch(server.url + path, { method: 'POST', body, headers, signal: AbortSignal.timeout(30_000) });
  return { status: res.status, body: await res.text() };
};

const api = async (path: string) => {
  const res = await fetch(server.url + path, { headers: { authorization: `Bearer ${TEST_KEYS.personal}` }, signal: AbortSignal.timeout(30_000) });
  return { status: res.status, body: (await res.json()) as any };
};

/** Stored events of a name (after a sentinel request, so every request before it was processed). */
async function storedCount(event: string): Promise<number> {
  const sentinel = `sentinel-${crypto.randomUUID()}`;
  expect(await post('/batch/', JSON.stringify({ api_key: TEST_KEYS.project, batch: [{ event: sentinel, distinct_id: 's' }] }))).toEqual({ status: 200, body: '{"status":1}' });
  for (const deadline = Date.now() + 20_000; ; ) {
    const seen = await api(`/api/projects/1/events/?event=${encodeURIComponent(sentinel)}`);
    if (seen.body.count === 1 || Date.now() > deadline) break;
    await Bun.sleep(50);
  }
  return (await api(`/api/projects/1/events/?event=${encodeURIComponent(event)}`)).body.count;
}

const invalidPayload = (detail: string, attr: string | null = null) => ({ type: 'validation_error', code: 'invalid_payload', detail, attr });

describe('malformed batch entries: 400 with the error body, nothing of the request stored', () => {
  const ok = (name: string) => ({ event: name, distinct_id: 'u1', properties: { a: 1 } });
  test.each([
    ['a null entry', (n: string) => JSON.stringify({ api_key: TEST_KEYS.project, batch: [ok(n), null] }), invalidPayload('Invalid payload: event 1 is not an object (got null).', 'batch')],
    ['{"batch": [null]}', () => JSON.stringify({ api_key: TEST_KEYS.project, batch: [null] }), invalidPayload('Invalid payload: event 0 is not an object (got null).')],
    ['a string entry', (n: string) => JSON.stringify({ api_key: TEST_KEYS.project, batch: ['x', ok(n)] }), invalidPayload('Invalid payload: event 0 is not an object (got a string).', 'batch')],
    [
      'properties that are a string',
      (n: string) => JSON.stringify({ api_key: TEST_KEYS.project, batch: [ok(n), { event: n, distinct_id: 'u1', properties: 'plan=pro' }] }),
      invalidPayload('Invalid payload: the properties of event 1 must be an object (got a string).', 'properties'),
    ],
    [
      'a NaN literal',
      (n: string) => `{"api_key":"${TEST_KEYS.project}","batch":[{"event":"${n}","distinct_id":"u1","properties":{"a":NaN}}]}`,
      invalidPayload('Malformed request data: Invalid JSON: JSON Parse error: Unexpected identifier "NaN"'),
    ],
    [
      'an Infinity literal',
      (n: string) => `{"api_key":"${TEST_KEYS.project}","event":"${n}","distinct_id":"u1","properties":{"a":Infinity}}`,
      invalidPayload('Malformed request data: Invalid JSON: JSON Parse error: Unexpected identifier "Infinity"'),
    ],
  ] as const)('%s', async (_name, body, error) => {
    const name = `malformed-${crypto.randomUUID()}`;
    const res = await post('/batch/', body(name));
    expect({ status: res.status, body: JSON.parse(res.body) }).toEqual({ status: 400, body: error });
    expect(await storedCount(name)).toBe(0);
  });

  test('a batch of 10,000 with one null (parsed in the parser thread) is refused whole: nothing stored, nothing dead-lettered', async () => {
    const name = `big-null-${crypto.randomUUID()}`;
    const batch: unknown[] = Array.from({ length: 10_000 }, (_, i) => ({ event: name, distinct_id: `u${i % 50}`, properties: { i } }));
    batch[6_123] = null;
    const res = await post('/batch/', JSON.stringify({ api_key: TEST_KEYS.project, batch }));
    expect({ status: res.status, body: JSON.parse(res.body) }).toEqual({ status: 400, body: invalidPayload('Invalid payload: event 6123 is not an object (got null).', 'batch') });
    expect(await storedCount(name)).toBe(0);
    expect(await listDeadLetters(server.dataDir)).toEqual([]);
  });

  test('a batch of 10,000 with one event without a name keeps the silent 200: the 9,999 others are stored, nothing dead-lettered', async () => {
    const name = `big-nameless-${crypto.randomUUID()}`;
    const batch: Array<Record<string, unknown>> = Array.from({ length: 10_000 }, (_, i) => ({ event: name, distinct_id: `u${i % 50}`, properties: { i } }));
    batch[6_123] = { distinct_id: 'u1', properties: { i: 6_123 } };
    expect(await post('/batch/', JSON.stringify({ api_key: TEST_KEYS.project, batch }))).toEqual({ status: 200, body: '{"status":1}' });
    expect(await storedCount(name)).toBe(9_999);
    expect(await listDeadLetters(server.dataDir)).toEqual([]);
  });
});

describe('lone surrogates: JSON escapes JavaScript accepts and DuckDB does not are stored as U+FFFD', () => {
  // `\\ud800` alone is valid JSON to JSON.parse but not to DuckDB's JSON reader: such an event
  // was answered 200 and then dead-lettered by the load (and its person's flush refused).
  const lone = (name: string, i: number) => ({
    event: name,
    distinct_id: `lone-${name}`,
    properties: { i, text: 'a\ud800b', ['key\udc00']: 1, nested: { list: ['\udbff', 'ok \ud83d\ude00'] }, $set: { nick: 'x\udfffy' } },
  });
  const expected = (i: number) => ({ i, text: 'a\ufffdb', ['key\ufffd']: 1, nested: { list: ['\ufffd', 'ok \ud83d\ude00'] } });

  test.each([
    ['a small body (prepared on the main thread)', 1],
    ['a batch of 5,000 (prepared in the parser thread)', 5_000],
  ] as const)('%s: 200, every event stored with U+FFFD, its person too, nothing dead-lettered', async (_kind, n) => {
    const name = `lone-${crypto.randomUUID()}`;
    const body = JSON.stringify({ api_key: TEST_KEYS.project, batch: Array.from({ length: n }, (_, i) => lone(name, i)) });
    expect(body).toContain('\\ud800');
    expect(await post('/batch/', body)).toEqual({ status: 200, body: '{"status":1}' });
    expect(await storedCount(name)).toBe(n);
    const listed = await api(`/api/projects/1/events/?event=${encodeURIComponent(name)}&limit=1&properties=${encodeURIComponent(JSON.stringify([{ key: 'i', value: 0, operator: 'exact' }]))}`);
    const { $set, ...props } = listed.body.results[0].properties;
    expect(props).toMatchObject(expected(0));
    expect($set).toEqual({ nick: 'x\ufffdy' });
    const person = await api(`/api/projects/1/persons/?distinct_id=${encodeURIComponent(`lone-${name}`)}`);
    expect(person.body.results.map((p: { properties: Record<string, unknown> }) => p.properties.nick)).toEqual(['x\ufffdy']);
    expect(await listDeadLetters(server.dataDir)).toEqual([]);
  });
});

describe('a compression hint that lies: the bytes win', () => {
  test('posthog-js ?compression=gzip-js with a form body of base64 JSON (data=) is stored', async () => {
    const name = `lying-hint-${crypto.randomUUID()}`;
    const events = [{ event: name, properties: { distinct_id: 'hint-user', token: TEST_KEYS.project, $lib: 'web', n: 1 } }];
    const data = Buffer.from(JSON.stringify(events)).toString('base64');
    const res = await post(`/e/?ip=1&_=${Date.now()}&ver=1.200.0&compression=gzip-js`, `data=${encodeURIComponent(data)}`, { 'content-type': 'application/x-www-form-urlencoded' });
    expect(res).toEqual({ status: 200, body: '{"status":1}' });
    expect(await storedCount(name)).toBe(1);
    const stored = (await api(`/api/projects/1/events/?event=${name}`)).body.results[0];
    expect({ distinct_id: stored.distinct_id, n: stored.properties.n, lib: stored.properties.$lib }).toEqual({ distinct_id: 'hint-user', n: 1, lib: 'web' });
  });

  test('Content-Encoding: gzip over plain JSON is stored; a body that is gzip but broken is still a 400', async () => {
    const name = `lying-encoding-${crypto.randomUUID()}`;
    const plain = JSON.stringify({ api_key: TEST_KEYS.project, event: name, distinct_id: 'u1' });
    expect(await post('/capture/', plain, { 'content-type': 'application/json', 'content-encoding': 'gzip' })).toEqual({ status: 200, body: '{"status":1}' });
    expect(await storedCount(name)).toBe(1);
    const broken = await post('/capture/?compression=gzip', new Uint8Array(Buffer.from('1f8b0800000000000003', 'hex')), { 'content-type': 'text/plain' });
    expect({ status: broken.status, body: JSON.parse(broken.body) }).toEqual({ status: 400, body: invalidPayload('Malformed request data: Failed to decompress data. unexpected end of file') });
  });
});

describe("PostHog's capture conventions", () => {
  test('$performance_event is answered 200 and not stored; the events beside it are', async () => {
    const name = `beside-perf-${crypto.randomUUID()}`;
    const batch = [
      { event: '$performance_event', distinct_id: 'perf-user', properties: { '0': 'resource', '1': 12.5 } },
      { event: name, distinct_id: 'perf-user' },
    ];
    expect(await post('/batch/', JSON.stringify({ api_key: TEST_KEYS.project, batch }))).toEqual({ status: 200, body: '{"status":1}' });
    expect(await post('/e/', JSON.stringify({ api_key: TEST_KEYS.project, event: '$performance_event', distinct_id: 'perf-user' }))).toEqual({ status: 200, body: '{"status":1}' });
    expect(await storedCount(name)).toBe(1);
    expect(await storedCount('$performance_event')).toBe(0);
    const names = (await api('/api/projects/1/event_definitions/?search=performance')).body.results.map((d: { name: string }) => d.name);
    expect(names).toEqual([]);
  });

  test('beacon=1 is answered 204 without a body (and the event is stored); errors keep their status', async () => {
    const name = `beacon-${crypto.randomUUID()}`;
    const data = Buffer.from(JSON.stringify([{ event: name, properties: { distinct_id: 'b', token: TEST_KEYS.project } }])).toString('base64');
    const res = await fetch(`${server.url}/e/?ip=1&_=${Date.now()}&ver=1.200.0&compression=base64&beacon=1`, {
      method: 'POST',
      body: `data=${encodeURIComponent(data)}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://app.example' },
    });
    expect({ status: res.status, body: await res.text(), origin: res.headers.get('access-control-allow-origin') }).toEqual({ status: 204, body: '', origin: 'https://app.example' });
    expect(await storedCount(name)).toBe(1);
    const bad = await post('/e/?beacon=1', '{"event":', { 'content-type': 'text/plain' });
    expect(bad.status).toBe(400);
  });
});

describe('deep nesting', () => {
  const deepBody = (name: string, depth: number, kind: 'array' | 'object') => {
    const inner = kind === 'array' ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
    return `{"api_key":"${TEST_KEYS.project}","event":"${name}","distinct_id":"u1","properties":{"x":${inner}}}`;
  };

  test.each(['array', 'object'] as const)('a body 100,000 levels deep (%s) is refused with 400 within 1 s, nothing stored', async (kind) => {
    const name = `deep-${kind}-${crypto.randomUUID()}`;
    const started = performance.now();
    const res = await post('/batch/', deepBody(name, 100_000, kind));
    const ms = performance.now() - started;
    expect({ status: res.status, body: JSON.parse(res.body) }).toEqual({ status: 400, body: invalidPayload('Malformed request data: JSON nested deeper than 128 levels.') });
    expect(ms).toBeLessThan(1_000);
    expect(await storedCount(name)).toBe(0);
  });

  test('the private API and flags refuse it the same way; the server answers as before afterwards', async () => {
    const inner = '['.repeat(100_000) + ']'.repeat(100_000);
    const started = performance.now();
    const patched = await fetch(`${server.url}/api/projects/1/`, {
      method: 'PATCH',
      body: `{"test_account_filters":${inner}}`,
      headers: { authorization: `Bearer ${TEST_KEYS.personal}`, 'content-type': 'application/json' },
    });
    expect({ status: patched.status, body: await patched.json() }).toEqual({
      status: 400,
      body: invalidPayload('Malformed request body: JSON nested deeper than 128 levels.'),
    });
    const flags = await post('/decide/?v=2', `{"api_key":"${TEST_KEYS.project}","distinct_id":"u1","person_properties":{"a":${inner}}}`);
    expect({ status: flags.status, body: JSON.parse(flags.body) }).toEqual({ status: 400, body: invalidPayload('Malformed request data: JSON nested deeper than 128 levels.') });
    expect(performance.now() - started).toBeLessThan(2_000);
    expect((await api('/api/projects/1/')).body.test_account_filters).toEqual([]);
  });

  test('the limit counts the envelope: 128 levels in all are stored, 129 refused', async () => {
    // {…, properties: {x: <inner>}}: the envelope and properties are two levels.
    const name = `deep-edge-${crypto.randomUUID()}`;
    expect(await post('/capture/', deepBody(name, 126, 'array'))).toEqual({ status: 200, body: '{"status":1}' });
    expect((await post('/capture/', deepBody(name, 127, 'array'))).status).toBe(400);
    expect(await storedCount(name)).toBe(1);
  });
});
