import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { gzipSync } from 'node:zlib';
import { prepareIngest, type IngestRequest } from '../../src/core/ingest/prepare-ingest';
import { AppError } from '../../src/errors';
import { prepareRows } from '../../src/pipeline';
import { silentLogger } from '../../src/logger';
import { createIngestParser, type IngestParserPool } from '../../src/workers/ingest-parser';
import { movableRows } from '../../src/workers/ingest-parser-protocol';
import type { PreparedRows } from '../../src/pipeline';
import { giveBack, POOLED_MIN_BYTES, spareLineBytes, takeSpares } from '../../src/storage/events/log/line-buffers';
import { BASE, createTestApp, type TestApp } from '../helpers/test-app';

/** Large capture bodies decoded and parsed in a worker thread: the same answer as the main thread's, moved back. */
const MAX = 1024 * 1024;
const TOKEN = 'phc_parser_token_0123456789abcdefghijklmnopqrstuv';
const NOW = new Date('2026-11-22T06:06:00.000Z');
const SEED = '00000000000000aa';

let pool: IngestParserPool;
beforeAll(() => {
  pool = createIngestParser(2, MAX, silentLogger);
});
afterAll(() => pool.close());

const uuid = (n: number) => `01900000-0000-7000-8000-${String(n).padStart(12, '0')}`;

/** ~`n` × 1 KB events: persons named by distinct id, an alias, `$set`, a uuid each. */
function batch(n: number, seed = 0) {
  return {
    api_key: TOKEN,
    sent_at: '2026-11-22T06:05:59.000Z',
    batch: Array.from({ length: n }, (_, i) => ({
      event: i % 10 === 0 ? '$identify' : `event-${i % 7}`,
      distinct_id: `user-${seed}-${i % 40}`,
      uuid: uuid(seed * 10_000 + i),
      timestamp: new Date(Date.UTC(2026, 10, 22, 6, 0, i % 60)).toISOString(),
      properties: {
        $current_url: `https://example.com/page/${i}?q=${'x'.repeat(600)}`,
        n: i,
        ...(i % 10 === 0 ? { $anon_distinct_id: `anon-${seed}-${i}`, $set: { plan: `p${i % 3}`, name: 'Zoë' } } : {}),
      },
    })),
  };
}

const request = (body: Uint8Array, extra: Partial<IngestRequest> = {}): IngestRequest => ({
  body,
  contentType: 'application/json',
  contentEncoding: null,
  query: new URLSearchParams(),
  ip: '203.0.113.7',
  engage: false,
  ...extra,
});

const bytesOf = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const thrown = (f: () => unknown): unknown => {
  try {
    f();
  } catch (error) {
    return error;
  }
  throw new Error('did not throw');
};

describe('ingest parser threads', () => {
  test.each([
    ['plain JSON', () => request(bytesOf(batch(120)))],
    ['gzip by header', () => request(new Uint8Array(gzipSync(bytesOf(batch(120)))), { contentEncoding: 'gzip' })],
    ['gzip-js by query, the key from the query', () => request(new Uint8Array(gzipSync(bytesOf({ ...batch(120), api_key: undefined }))), { query: new URLSearchParams('compression=gzip-js&token=phc_q') })],
  ])('%s: what the main thread would make, without the parsed events, and their rows prepared as the main thread would', async (_, make) => {
    const local = prepareIngest(make(), MAX, true);
    const { rows, ...remote } = await pool.prepare(make(), NOW.getTime(), SEED);
    expect(remote).toEqual({ ...local, parsed: null });
    expect(remote.events).toBe(120);
    expect(remote.distinctIds).toContain('anon-0-0');
    const here = prepareRows({ receivedAt: NOW.getTime(), ip: '203.0.113.7', anonymizeIps: false, sentAt: local.sentAt }, local.parsed!, () => 'unused: every event has a uuid');
    expect(rows!.rows).toBe(120);
    expect({ ...rows!, lines: Buffer.from(rows!.lines).toString() }).toEqual({ ...here, lines: Buffer.from(here.lines).toString(), people: JSON.stringify(here.people) });
  });

  test('a body moved to the thread comes back with the answer (its buffer is handed over both ways)', async () => {
    const body = bytesOf(batch(50));
    const copy = body.slice();
    const prepared = await pool.prepare(request(body), NOW.getTime(), SEED);
    expect(body.byteLength).toBe(0); // moved, not copied
    expect(prepared.body).toEqual(copy);
  });

  test.each([
    ['malformed JSON', () => request(new TextEncoder().encode('{"batch": [' + '{"event":"x"},'.repeat(3000)))],
    ['broken gzip', () => request(new Uint8Array([0x1f, 0x8b, 8, 0, ...new Array(40_000).fill(7)]))],
    ['invalid UTF-8', () => request(new Uint8Array([0x7b, 0xff, 0xfe, ...new Array(40_000).fill(0x20), 0x7d]))],
    ['a gzip bomb over the cap', () => request(new Uint8Array(gzipSync(new Uint8Array(MAX * 4).fill(0x20))), { contentEncoding: 'gzip' })],
  ])('%s: the same AppError as on the main thread', async (_, make) => {
    const local = thrown(() => prepareIngest(make(), MAX, false)) as AppError;
    expect(local).toBeInstanceOf(AppError);
    const remote = await pool.prepare(make(), NOW.getTime(), SEED).then(
      () => null,
      (error: unknown) => error,
    );
    expect(remote).toBeInstanceOf(AppError);
    expect({ kind: (remote as AppError).kind, detail: (remote as AppError).detail, attr: (remote as AppError).attr }).toEqual({ kind: local.kind, detail: local.detail, attr: local.attr });
  });

  /** No spares here or in the threads (they drop theirs past the memory trigger). */
  const clearSpares = () => {
    pool.notePastTrigger(true);
    pool.notePastTrigger(false);
  };

  test('lines buffers given back here move to the thread with the next body, which encodes its rows into one of them', async () => {
    clearSpares();
    const body = bytesOf(batch(400, 7)); // ~590 KB of lines: a pooled size
    const fresh = (await pool.prepare(request(body.slice()), NOW.getTime(), SEED)).rows!;
    const units = fresh.lines.buffer.byteLength / POOLED_MIN_BYTES; // its estimate rounded up
    expect(units).toBeGreaterThanOrEqual(3);
    // Spares one unit larger than a fresh buffer for these lines (so within twice their estimate),
    // given back twice over (one to each thread).
    const spares = [new ArrayBuffer((units + 1) * POOLED_MIN_BYTES), new ArrayBuffer((units + 1) * POOLED_MIN_BYTES)];
    for (const s of spares) giveBack(s);
    const [a, b] = await Promise.all([1, 2].map(() => pool.prepare(request(body.slice()), NOW.getTime(), SEED)));
    expect(spares.map((s) => s.detached)).toEqual([true, true]); // moved, with the first body
    expect(spareLineBytes()).toBe(0);
    const sizes = [a.rows!.lines.buffer.byteLength, b.rows!.lines.buffer.byteLength].sort((x, y) => x - y);
    // The first body's thread got both spares and encoded into one; the other thread had none.
    expect(sizes).toEqual([units * POOLED_MIN_BYTES, (units + 1) * POOLED_MIN_BYTES]);
    for (const r of [a.rows!, b.rows!]) expect(Buffer.from(r.lines).toString()).toBe(Buffer.from(fresh.lines).toString());
  });

  test('past the memory guard trigger, the threads drop the spares they are sent (fresh buffers instead), and keep them again once back under it', async () => {
    clearSpares();
    const body = bytesOf(batch(400, 8));
    const fresh = (await pool.prepare(request(body.slice()), NOW.getTime(), SEED)).rows!;
    const units = fresh.lines.buffer.byteLength / POOLED_MIN_BYTES;
    const spareSize = (units + 1) * POOLED_MIN_BYTES;
    pool.notePastTrigger(true);
    const moved = new ArrayBuffer(spareSize);
    giveBack(moved);
    const under = await pool.prepare(request(body.slice()), NOW.getTime(), SEED);
    expect(moved.detached).toBe(true); // sent, and dropped there
    expect(under.rows!.lines.buffer.byteLength).toBe(units * POOLED_MIN_BYTES);
    pool.notePastTrigger(false);
    const kept = new ArrayBuffer(spareSize);
    giveBack(kept);
    const [a, b] = await Promise.all([1, 2].map(() => pool.prepare(request(body.slice()), NOW.getTime(), SEED)));
    expect([a.rows!.lines.buffer.byteLength, b.rows!.lines.buffer.byteLength].sort((x, y) => x - y)).toEqual([units * POOLED_MIN_BYTES, spareSize]);
  });

  test('a lines buffer of a pooled size is moved back however little the lines fill it; a small one is copied, and other buffers move only when mostly filled', () => {
    const rows = (lines: Uint8Array, teams = new Int32Array(4)) => ({ lines, teams, persons: new Int32Array(4) }) as unknown as PreparedRows;
    const pooled = new ArrayBuffer(4 * POOLED_MIN_BYTES);
    const moved = movableRows(rows(new Uint8Array(pooled, 0, 100_000)));
    expect(moved.length).toBe(1);
    expect(moved[0]).toBe(pooled);
    expect(movableRows(rows(new Uint8Array(new ArrayBuffer(32 * 1024), 0, 30_000)))).toEqual([]);
    const teams = new ArrayBuffer(256 * 1024);
    expect(movableRows(rows(new Uint8Array(8), new Int32Array(teams, 0, 1_000)))).toEqual([]);
    expect(movableRows(rows(new Uint8Array(8), new Int32Array(teams)))[0]).toBe(teams);
  });

  test('many bodies in flight over two threads: each is answered with its own (answers matched by id)', async () => {
    const bodies = Array.from({ length: 12 }, (_, k) => batch(30 + k, k));
    const answers = await Promise.all(bodies.map((b) => pool.prepare(request(bytesOf(b)), NOW.getTime(), SEED)));
    expect(answers.map((a) => a.events)).toEqual(bodies.map((b) => b.batch.length));
    expect(answers.map((a) => a.distinctIds[0])).toEqual(bodies.map((_, k) => `user-${k}-0`));
  });
});

test('a closed pool refuses what it is asked (processing at a stop must not wait for a thread that is gone)', async () => {
  const closing = createIngestParser(1, MAX, silentLogger);
  await closing.close();
  const context = { teamId: 1, receivedAt: NOW.getTime(), ip: null, anonymizeIps: false, sentAt: null, engage: false };
  await expect(closing.prepareRun([{ context, body: JSON.stringify(batch(2)) }])).rejects.toThrow('ingest thread closed');
  await expect(closing.prepareBody(context, JSON.stringify(batch(2)))).rejects.toThrow('ingest thread closed');
});

describe('capture through the app with a parser thread', () => {
  let viaThread: TestApp;
  let local: TestApp;
  let parser: IngestParserPool;
  let handedOver = 0;
  let preparedAgain = 0;
  beforeAll(async () => {
    viaThread = await createTestApp({ BOOTSTRAP_PROJECT_API_KEY: TOKEN }, () => NOW);
    parser = createIngestParser(1, viaThread.deps.config.MAX_BODY_BYTES, silentLogger);
    viaThread.deps.ingestParser = {
      prepare: (req, receivedAt, seed) => (handedOver++, parser.prepare(req, receivedAt, seed)),
      prepareBody: (context, body) => (preparedAgain++, parser.prepareBody(context, body)),
      noteAnonymizing: (token, anonymizes) => parser.noteAnonymizing(token, anonymizes),
    };
    // Everything on the main thread: no parser thread at receipt, none behind the 200.
    local = await createTestApp({ BOOTSTRAP_PROJECT_API_KEY: TOKEN }, () => NOW, silentLogger, {}, { preparer: null });
  });
  afterAll(async () => {
    await parser.close();
    await viaThread.close();
    await local.close();
  });

  const post = (app: TestApp, body: Uint8Array, headers: Record<string, string> = {}) =>
    app.app.handle(new Request(`${BASE}/batch/`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.7', ...headers }, body }));

  const stored = async (app: TestApp) => {
    const list = await app.json('GET', `/api/projects/${app.account.project.id}/events/?limit=1000`);
    return list.body.results.map((e: any) => ({ uuid: e.id, event: e.event, distinct_id: e.distinct_id, properties: e.properties, timestamp: e.timestamp })).sort((a: any, b: any) => a.uuid.localeCompare(b.uuid));
  };

  test('large batches (plain and gzip) store the same events and persons as on the main thread; small ones stay there', async () => {
    const big = bytesOf(batch(150, 1));
    const gz = new Uint8Array(gzipSync(bytesOf(batch(150, 2))));
    const small = bytesOf(batch(3, 3));
    const smallGz = new Uint8Array(gzipSync(small));
    expect(big.length).toBeGreaterThan(16 * 1024);
    expect(gz.length).toBeLessThan(16 * 1024); // judged by its size once inflated (×8)
    expect(smallGz.length * 8).toBeLessThan(16 * 1024);
    for (const app of [viaThread, local]) {
      for (const [body, headers] of [[big, {}], [gz, { 'content-encoding': 'gzip' }], [small, {}], [smallGz, {}]] as const) {
        const res = await post(app, body.slice(), headers);
        expect({ status: res.status, body: await res.text() }).toEqual({ status: 200, body: '{"status":1}' });
      }
    }
    expect(handedOver).toBe(2); // the large ones, plain and gzip
    const [a, b] = [await stored(viaThread), await stored(local)];
    expect(a.length).toBe(303); // the small batch twice: the same uuids, stored once
    expect(a).toEqual(b);
    const person = (app: TestApp) => app.deps.storage.persons.findByDistinctId(app.account.project.id, 'anon-1-10');
    expect(person(viaThread)?.properties).toEqual(person(local)!.properties);
    expect(person(viaThread)?.properties).toMatchObject({ name: 'Zoë' });
  });

  test('every event prepared in the thread carries the person its distinct id has, as on the main thread', async () => {
    const body = bytesOf(batch(60, 5));
    const small = bytesOf(batch(2, 6));
    for (const app of [viaThread, local]) {
      for (const b of [body, small]) expect((await post(app, b.slice())).status).toBe(200);
    }
    const pairs = async (app: TestApp) => {
      const q = encodeURIComponent('["distinct_id", "person_id"]');
      const list = await app.json('GET', `/api/projects/${app.account.project.id}/events/?select=${q}&limit=1000`);
      return list.body.results as Array<[string, string | null]>;
    };
    for (const app of [viaThread, local]) {
      const rows = await pairs(app);
      expect(rows.length).toBeGreaterThan(60);
      const mismatched = rows.filter(([d, p]) => p !== app.deps.storage.persons.findByDistinctId(app.account.project.id, d)?.uuid);
      expect(mismatched).toEqual([]);
    }
    const distinctIds = (rows: Array<[string, string | null]>) => rows.map(([d]) => d).sort();
    expect(distinctIds(await pairs(viaThread))).toEqual(distinctIds(await pairs(local)));
  });

  test('a project that anonymizes addresses gets no $ip on events parsed in the thread either: prepared again once, then the thread knows', async () => {
    const id = viaThread.account.project.id;
    const ips = async () => {
      const q = encodeURIComponent('["distinct_id", "properties.$ip"]');
      const list = await viaThread.json('GET', `/api/projects/${id}/events/?select=${q}&limit=1000`);
      return (list.body.results as Array<[string, string | null]>).filter(([d]) => d.startsWith('user-8-') || d.startsWith('user-9-')).map(([d, ip]) => `${d.slice(0, 6)} ${ip}`);
    };
    const again = preparedAgain;
    expect((await post(viaThread, bytesOf(batch(30, 8)))).status).toBe(200);
    expect(preparedAgain - again).toBe(0);
    expect((await viaThread.json('PATCH', `/api/projects/${id}/`, { body: { anonymize_ips: true } })).status).toBe(200);
    try {
      // The first body after the change is prepared again; the thread is told, and prepares the next one so.
      expect((await post(viaThread, bytesOf(batch(30, 9)))).status).toBe(200);
      expect(preparedAgain - again).toBe(1);
      expect((await post(viaThread, bytesOf(batch(30, 9)))).status).toBe(200);
      expect(preparedAgain - again).toBe(1);
      expect(new Set(await ips())).toEqual(new Set(['user-8 203.0.113.7', 'user-9 null']));
    } finally {
      await viaThread.json('PATCH', `/api/projects/${id}/`, { body: { anonymize_ips: false } });
    }
    // Turned off: the next body is prepared again with addresses kept, and the thread told again.
    expect((await post(viaThread, bytesOf(batch(30, 7)))).status).toBe(200);
    expect(preparedAgain - again).toBe(2);
    expect((await post(viaThread, bytesOf(batch(30, 7)))).status).toBe(200);
    expect(preparedAgain - again).toBe(2);
    expect(new Set(await ips())).toEqual(new Set(['user-8 203.0.113.7', 'user-9 null']));
    const q = encodeURIComponent('["distinct_id", "properties.$ip"]');
    const list = await viaThread.json('GET', `/api/projects/${id}/events/?select=${q}&limit=1000`);
    expect(new Set((list.body.results as Array<[string, string | null]>).filter(([d]) => d.startsWith('user-7-')).map(([, ip]) => ip))).toEqual(new Set(['203.0.113.7']));
  });

  test('a malformed large body is the same 400 either way, and nothing is stored', async () => {
    const bad = new TextEncoder().encode('{"api_key":"' + TOKEN + '","batch":[' + '{"event":"x","distinct_id":"d"},'.repeat(1000));
    const before = (await stored(viaThread)).length;
    const answers = [];
    for (const app of [viaThread, local]) {
      const res = await post(app, bad.slice());
      answers.push({ status: res.status, body: await res.json() });
    }
    expect(answers[0].status).toBe(400);
    expect(answers[0]).toEqual(answers[1]);
    expect((await stored(viaThread)).length).toBe(before);
  });

  test('an unknown key on a large body is the 401 of the main thread', async () => {
    const body = bytesOf({ ...batch(40, 4), api_key: 'phc_unknown_key_0000000000000000000000000' });
    const res = await post(viaThread, body);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { code: string }).code).toBe('invalid_api_key');
  });
});
