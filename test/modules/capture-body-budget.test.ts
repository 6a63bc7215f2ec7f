import { describe, expect, test } from 'bun:test';
import { BodyBudget, BodyRoom, SMALL_BODY_BYTES } from '../../src/modules/capture/body-budget';
import { createApp } from '../../src/app';
import { AppError } from '../../src/errors';
import { decodedSize, decodedSizeHint } from '../../src/modules/capture/ingest';
import { bodiesInHandBytes } from '../../src/modules/capture';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { eventually } from '../helpers/cluster';
import { parseExposition } from '../helpers/prometheus';
import { createTestApp, BASE } from '../helpers/test-app';

/** A scheduler the test runs by hand: the waits' time-outs fire when the test says. */
function manualTimers() {
  const due: Array<{ fn: () => void; ms: number; cancelled: boolean }> = [];
  return {
    schedule: (fn: () => void, ms: number) => {
      const entry = { fn, ms, cancelled: false };
      due.push(entry);
      return () => {
        entry.cancelled = true;
      };
    },
    /** The earliest scheduled time-out that is still pending, run now. */
    fireFirst() {
      const entry = due.find((e) => !e.cancelled);
      if (!entry) throw new Error('no time-out pending');
      entry.cancelled = true;
      entry.fn();
    },
    get pending() {
      return due.filter((e) => !e.cancelled).map((e) => e.ms);
    },
  };
}

/** Which of these promises have settled, and how (without waiting for the others). */
async function states(promises: Promise<unknown>[]): Promise<string[]> {
  const out = promises.map(() => 'waiting');
  promises.forEach((p, i) => p.then(() => (out[i] = 'taken'), (e) => (out[i] = e instanceof AppError ? `${e.kind}${e.retryAfter === undefined ? '' : `, retry after ${e.retryAfter}`}` : 'failed')));
  await Bun.sleep(0);
  return out;
}

describe('BodyBudget', () => {
  test('bodies are taken while they fit; a larger one waits for room and is let in, in arrival order, as bodies are released', async () => {
    const timers = manualTimers();
    const budget = new BodyBudget(300_000, 5_000, timers.schedule);
    const a = await budget.take(200_000);
    const b = budget.take(150_000);
    const c = budget.take(100_000);
    expect(await states([b, c])).toEqual(['waiting', 'waiting']);
    expect(budget.inHand).toBe(200_000);
    expect(budget.queued).toBe(2);
    expect(timers.pending).toEqual([5_000, 5_000]);
    a();
    a(); // a second release changes nothing
    expect(await states([b, c])).toEqual(['taken', 'taken']);
    expect(budget.inHand).toBe(250_000);
    expect(timers.pending).toEqual([]);
    (await b)();
    (await c)();
    expect(budget.inHand).toBe(0);
  });

  test('a small body is taken at once while a large one waits; a large one arriving later queues behind the first', async () => {
    const budget = new BodyBudget(400_000, 5_000, manualTimers().schedule);
    const first = await budget.take(200_000);
    const large = budget.take(250_000);
    const small = budget.take(SMALL_BODY_BYTES);
    const fitsButLater = budget.take(70_000);
    expect(await states([large, small, fitsButLater])).toEqual(['waiting', 'taken', 'waiting']);
    first();
    expect(await states([large, fitsButLater])).toEqual(['taken', 'taken']);
    expect(budget.inHand).toBe(250_000 + SMALL_BODY_BYTES + 70_000);
  });

  test('a body larger than the budget is taken alone', async () => {
    const budget = new BodyBudget(100_000, 5_000, manualTimers().schedule);
    const small = await budget.take(10);
    const huge = budget.take(5_000_000);
    expect(await states([huge])).toEqual(['waiting']);
    small();
    expect(await states([huge])).toEqual(['taken']);
    expect(budget.inHand).toBe(100_000);
    const next = budget.take(10);
    expect(await states([next])).toEqual(['waiting']);
    (await huge)();
    expect(await states([next])).toEqual(['taken']);
  });

  test.each([
    ['outlasts its bound: refused with 503 and Retry-After, counted as a refusal', 'timeout', 'unavailable, retry after 1', 1],
    ['ends as its client leaves: client_closed, not a refusal', 'client leaves', 'client_closed', 0],
  ] as const)('a wait that %s; the next in line is let in if it fits', async (_, end, ended, refusals) => {
    const timers = manualTimers();
    const budget = new BodyBudget(300_000, 5_000, timers.schedule);
    const held = await budget.take(150_000);
    const left = new AbortController();
    const large = budget.take(300_000, () => left.signal);
    const after = budget.take(100_000);
    expect(await states([large, after])).toEqual(['waiting', 'waiting']);
    if (end === 'timeout') timers.fireFirst();
    else left.abort();
    // The one behind it fits beside the held body: let in now, not after the large one's turn.
    expect(await states([large, after])).toEqual([ended, 'taken']);
    expect([budget.refused, budget.queued, timers.pending.length]).toEqual([refusals, 0, 0]);
    held();
    (await after)();
    expect(budget.inHand).toBe(0);
  });

  test('a client already gone is not queued; a body that fits is taken without its signal being asked for', async () => {
    const budget = new BodyBudget(300_000, 5_000, manualTimers().schedule);
    const gone = new AbortController();
    gone.abort();
    const full = await budget.take(300_000, () => {
      throw new Error('a body that fits needs no signal');
    });
    expect(await states([budget.take(100_000, () => gone.signal)])).toEqual(['client_closed']);
    expect(budget.queued).toBe(0);
    full();
  });

  test('with no wait allowed, a body that does not fit is refused at once', async () => {
    const budget = new BodyBudget(300_000, 0);
    const held = await budget.take(250_000);
    expect(await states([budget.take(100_000)])).toEqual(['unavailable, retry after 1']);
    expect(budget.refused).toBe(1);
    held();
    expect(await states([budget.take(100_000)])).toEqual(['taken']);
  });
});

describe('BodyRoom', () => {
  test('a room grows by what it lacks; while it waits for more, what it holds stays counted; a refused growth keeps what it held until released', async () => {
    const timers = manualTimers();
    const budget = new BodyBudget(100_000, 5_000, timers.schedule);
    const room = new BodyRoom(budget);
    await room.growTo(100_000 + 1); // at most the budget
    expect(budget.inHand).toBe(100_000);
    room.release();
    expect(budget.inHand).toBe(0);
    await room.growTo(10_000);
    const other = await budget.take(80_000);
    const growing = room.growTo(50_000);
    expect([await states([growing]), budget.inHand, budget.queued]).toEqual([['waiting'], 90_000, 1]);
    other();
    await growing;
    expect([budget.inHand, budget.queued]).toEqual([50_000, 0]);
    await room.growTo(20_000); // holds more already: nothing taken
    expect(budget.inHand).toBe(50_000);
    const held = await budget.take(40_000);
    const refused = room.growTo(90_000);
    timers.fireFirst();
    expect(await states([refused])).toEqual(['unavailable, retry after 1']);
    expect(budget.inHand).toBe(90_000);
    room.release();
    held();
    expect([budget.inHand, budget.refused]).toEqual([0, 1]);
  });
});

describe('bodiesInHandBytes', () => {
  test('32 MiB for each parser thread (the main thread when there is none), never under one body of the largest size', () => {
    const MiB = 1024 * 1024;
    expect([
      bodiesInHandBytes({ MAX_BODY_BYTES: 20 * MiB, INGEST_PARSE_THREADS: 0 }),
      bodiesInHandBytes({ MAX_BODY_BYTES: 20 * MiB, INGEST_PARSE_THREADS: 1 }),
      bodiesInHandBytes({ MAX_BODY_BYTES: 20 * MiB, INGEST_PARSE_THREADS: 3 }),
      bodiesInHandBytes({ MAX_BODY_BYTES: 100 * MiB, INGEST_PARSE_THREADS: 1 }),
    ]).toEqual([32 * MiB, 32 * MiB, 96 * MiB, 100 * MiB]);
  });
});

describe('decodedSize', () => {
  test('by its bytes once read: gzip and forms eight times their size (at most the cap), JSON as sent whatever its content type, anything else as sent', () => {
    const bytes = (text: string) => new TextEncoder().encode(text);
    const gzipped = gzipSync('{"event":"e"}'.repeat(500));
    const form = bytes(`data=${'A'.repeat(1000)}&compression=lz64`);
    const typed = (type: string) => new Headers({ 'content-type': type });
    // A body that opens as JSON is counted without a look at its headers (every single event).
    const unread = { get: (): never => { throw new Error('a header was read'); } };
    expect([
      decodedSize(gzipped, typed('application/json'), 10_000_000),
      decodedSize(gzipped, typed('application/json'), 100),
      decodedSize(form, typed('application/x-www-form-urlencoded'), 10_000_000),
      decodedSize(form, typed('text/plain'), 10_000_000), // old snippets' data= as text/plain
      decodedSize(bytes('{"event":"e"}'), typed('application/x-www-form-urlencoded'), 10_000_000), // curl's default type over JSON: read raw
      decodedSize(bytes('[{"event":"e"}]'), unread, 10_000_000),
      decodedSize(bytes('{"event":"e"}'), unread, 10_000_000),
      decodedSize(bytes('eyJldmVudCI6ImUifQ=='), typed('application/json'), 10_000_000), // base64 without a form: as sent
    ]).toEqual([gzipped.length * 8, 100, form.length * 8, form.length * 8, 13, 15, 13, 20]);
  });
});

describe('decodedSizeHint', () => {
  const hint = (headers: Record<string, string>, query = '') => decodedSizeHint(100_000, new Headers(headers), new URLSearchParams(query), 500_000);
  test('a body that says it is compressed counts eight times its size, at most the decoded cap; others as sent', () => {
    expect([
      hint({ 'content-type': 'application/json' }),
      hint({ 'content-type': 'application/json', 'content-encoding': 'gzip' }),
      hint({ 'content-type': 'application/json' }, 'compression=gzip-js'),
      hint({ 'content-type': 'application/x-www-form-urlencoded' }, 'compression=lz64'),
      hint({ 'content-type': 'text/plain;charset=UTF-8' }),
      hint({ 'content-type': 'application/x-www-form-urlencoded' }, 'compression=base64'),
      hint({ 'content-type': 'application/json', 'content-encoding': 'x-gzip' }),
      hint({ 'content-type': 'application/json', 'content-encoding': 'identity' }),
      decodedSizeHint(10_000, new Headers({ 'content-encoding': 'gzip' }), new URLSearchParams(), 500_000),
    ]).toEqual([100_000, 500_000, 500_000, 500_000, 500_000, 100_000, 500_000, 100_000, 80_000]);
  });
});

describe('capture holds large bodies to the budget', () => {
  // Random padding: gzip shrinks it about by half, not to nothing.
  const batchText = (key: string, n: number, tag: string) =>
    JSON.stringify({ api_key: key, batch: Array.from({ length: n }, (_, i) => ({ event: 'big', distinct_id: `${tag}-${i}`, properties: { pad: randomBytes(450).toString('hex'), i } })) });

  interface Budgeted {
    batch: (n: number, tag: string) => string;
    /** A body as a client sends it (with its Content-Length: a Request made here has none of its own). */
    post: (body: string | Uint8Array, headers?: Record<string, string>) => Promise<Response>;
    /** A chunked post (no Content-Length) whose body the test sends a part at a time. */
    chunked: (body: string | Uint8Array, headers?: Record<string, string>) => { response: Promise<Response>; send: (n?: number) => void; finish: () => Promise<number> };
    /** The bytes in hand once they are `n` (or what they are after a wait). */
    inHand: (n: number) => Promise<number>;
    storedTags: () => Promise<string[]>;
    metric: (name: string) => Promise<number>;
  }

  /**
   * A test app whose capture has a budget of `bytes` (300 kB) and `waitMs`; `storedTags` lists the
   * tags of the stored events' distinct ids, sorted.
   */
  async function withBudget(waitMs: number, run: (h: Budgeted) => Promise<void>, bytes = 300_000) {
    const t = await createTestApp();
    try {
      const app = createApp({ ...t.deps, captureBodies: { bytes, waitMs } });
      const encode = (body: string | Uint8Array) => (typeof body === 'string' ? new TextEncoder().encode(body) : body);
      const metric = async (name: string) => parseExposition(await (await app.handle(new Request(`${BASE}/metrics`))).text()).value(name);
      await run({
        batch: (n, tag) => batchText(t.account.project.apiToken, n, tag),
        post: (body, headers = { 'content-type': 'application/json' }) => {
          const data = encode(body);
          return app.handle(new Request(`${BASE}/batch/`, { method: 'POST', headers: { ...headers, 'content-length': String(data.byteLength) }, body: data }));
        },
        chunked: (body, headers = { 'content-type': 'application/json' }) => {
          const data = encode(body);
          let controller!: ReadableStreamDefaultController<Uint8Array>;
          const stream = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
          const response = app.handle(new Request(`${BASE}/batch/`, { method: 'POST', headers, body: stream }));
          let sent = 0;
          return {
            response,
            send(n = data.length - sent) {
              controller.enqueue(data.subarray(sent, sent + n));
              sent += n;
            },
            /** The rest of the body sent and the stream closed: the answer's status. */
            async finish() {
              this.send();
              controller.close();
              return (await response).status;
            },
          };
        },
        inHand: (n) => eventually(() => metric('hogbase_capture_body_bytes_in_hand'), (v) => v === n, 5_000),
        metric,
        storedTags: async () => {
          await t.deps.storage.events.flush();
          const listed = await t.json('GET', `/api/projects/${t.account.project.id}/events/?event=big&limit=1000`);
          return listed.body.results.map((e: { distinct_id: string }) => e.distinct_id.split('-')[0]).sort();
        },
      });
    } finally {
      await t.close();
    }
  }

  /** A gzip body of 200 events ('g') and a plain one of 100 ('p'): together they fit in 300 kB as sent, not with the gzip one decoded. */
  function gzipAndPlain(batch: Budgeted['batch']) {
    const gzipped = gzipSync(batch(200, 'g'));
    const plain = batch(100, 'p');
    expect(gzipped.length + plain.length).toBeLessThan(300_000);
    expect(gzipped.length * 8 + plain.length).toBeGreaterThan(300_000);
    return { gzipped, plain };
  }

  test('requests past the budget are answered 503 with Retry-After before their body is read, and what was answered 200 is stored', () =>
    withBudget(0, async ({ batch, post, storedTags, metric }) => {
      const answers = await Promise.all(['a', 'b', 'c'].map((tag) => post(batch(200, tag))));
      const seen = await Promise.all(answers.map(async (r) => ({ status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.json() })));
      expect(seen).toEqual([
        { status: 200, retryAfter: null, body: { status: 1 } },
        ...[1, 2].map(() => ({
          status: 503,
          retryAfter: '1',
          body: { type: 'server_error', code: 'unavailable', detail: 'Too many large request bodies are being received; retry later.', attr: null },
        })),
      ]);
      // /metrics shows the refusals, and nothing left in hand or waiting once all are answered.
      expect([await metric('hogbase_capture_bodies_refused_total'), await metric('hogbase_capture_bodies_waiting'), await metric('hogbase_capture_body_bytes_in_hand')]).toEqual([2, 0, 0]);
      // Room again once the first is answered.
      expect((await post(batch(200, 'd'))).status).toBe(200);
      expect(await storedTags()).toEqual([...Array(200).fill('a'), ...Array(200).fill('d')]);
    }));

  test('a gzip body is counted as it will be decoded: a plain body beside it finds no room', () =>
    withBudget(0, async ({ batch, post, storedTags }) => {
      const { gzipped, plain } = gzipAndPlain(batch);
      const answers = await Promise.all([post(gzipped, { 'content-type': 'application/json', 'content-encoding': 'gzip' }), post(plain)]);
      expect(answers.map((r) => r.status)).toEqual([200, 503]);
      expect(await storedTags()).toEqual(Array(200).fill('g'));
    }));

  test('over a real socket, a client that leaves while its body waits, or while it is read, frees its place: answered client_closed (499), nothing left in hand or waiting, the next request taken', async () => {
    const t = await createTestApp();
    const app = createApp({ ...t.deps, captureBodies: { bytes: 300_000, waitMs: 60_000 } });
    app.listen({ port: 0, hostname: '127.0.0.1' });
    try {
      const url = `http://127.0.0.1:${app.server!.port}`;
      const metrics = async () => parseExposition(await (await fetch(`${url}/metrics`)).text());
      const figure = (name: string, labels?: Record<string, string>) => async () => (await metrics()).value(name, labels);
      const body = batchText(t.account.project.apiToken, 200, 'x');
      expect(Buffer.byteLength(body) * 2).toBeGreaterThan(300_000); // two do not fit together
      // Headers and the start of the body, the rest never sent.
      const partly = () => {
        const socket = connect(app.server!.port!, '127.0.0.1');
        socket.on('error', () => undefined);
        socket.write(`POST /batch/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 1000)}`);
        return socket;
      };
      const reading = partly();
      expect(await eventually(figure('hogbase_capture_body_bytes_in_hand'), (n) => n > 0, 5_000)).toBe(Buffer.byteLength(body));
      const waiting = partly();
      expect(await eventually(figure('hogbase_capture_bodies_waiting'), (n) => n === 1, 5_000)).toBe(1);
      waiting.destroy();
      expect(await eventually(figure('hogbase_capture_bodies_waiting'), (n) => n === 0, 5_000)).toBe(0);
      reading.destroy();
      expect(await eventually(figure('hogbase_capture_body_bytes_in_hand'), (n) => n === 0, 5_000)).toBe(0);
      const answered = await eventually(figure('hogbase_http_requests_total', { method: 'POST', route: '/batch/', status: '499' }), (n) => n === 2, 5_000);
      expect([answered, await figure('hogbase_capture_bodies_refused_total')()]).toEqual([2, 0]);
      const whole = await fetch(`${url}/batch/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(whole.status).toBe(200);
      await t.deps.storage.events.flush();
      const listed = await t.json('GET', `/api/projects/${t.account.project.id}/events/?event=big&limit=1000`);
      expect(listed.body.results).toHaveLength(200);
    } finally {
      await app.stop(true);
      await t.close();
    }
  });

  // Neither says it is compressed: a gzip body sent as JSON (only its magic bytes tell), and an old
  // snippet's form whose `data=` is base64 of gzip.
  const undeclared = {
    'a gzip body that does not say so': (gzipped: Uint8Array) => ({ body: gzipped, type: 'application/json' }),
    "a form whose data is base64 gzip": (gzipped: Uint8Array) => ({ body: `data=${encodeURIComponent(Buffer.from(gzipped).toString('base64'))}`, type: 'application/x-www-form-urlencoded' }),
  };
  for (const [name, shape] of Object.entries(undeclared)) {
    test(`${name} is counted as decoded once its bytes are read: it and a plain body beside it do not both get in`, () =>
      withBudget(0, async ({ batch, post, storedTags }) => {
        const { gzipped, plain } = gzipAndPlain(batch);
        const { body, type } = shape(gzipped);
        expect(Buffer.byteLength(body) + plain.length).toBeLessThan(300_000);
        const answers = await Promise.all([post(body, { 'content-type': type }), post(plain)]);
        const statuses = answers.map((r) => r.status);
        expect([...statuses].sort()).toEqual([200, 503]);
        expect(await storedTags()).toEqual(Array(statuses[0] === 200 ? 200 : 100).fill(statuses[0] === 200 ? 'g' : 'p'));
      }));
  }

  test('chunked bodies (no Content-Length) are taken as small ones until they are read past that size: several small ones in hand at once', () =>
    withBudget(0, async ({ batch, chunked, inHand, metric, storedTags }) => {
      const posts = ['a', 'b', 'c'].map((tag) => chunked(batch(20, tag)));
      for (const p of posts) p.send(1000);
      // All three in hand, mid-read, each counted as a small body.
      expect(await inHand(3 * SMALL_BODY_BYTES)).toBe(3 * SMALL_BODY_BYTES);
      expect(await Promise.all(posts.map((p) => p.finish()))).toEqual([200, 200, 200]);
      expect([await metric('hogbase_capture_bodies_refused_total'), await metric('hogbase_capture_body_bytes_in_hand')]).toEqual([0, 0]);
      expect(await storedTags()).toEqual(['a', 'b', 'c'].flatMap((tag) => Array(20).fill(tag)));
    }));

  test('a chunked body is counted as twice what was read each time its read passes what it holds: a body beside it fits or finds no room by that count, and it is stored whole', () =>
    withBudget(0, async ({ batch, post, chunked, inHand, metric, storedTags }) => {
      const text = batch(200, 'c');
      expect(Buffer.byteLength(text)).toBeGreaterThan(SMALL_BODY_BYTES + 71_000);
      const body = chunked(text);
      body.send(1000);
      expect(await inHand(SMALL_BODY_BYTES)).toBe(SMALL_BODY_BYTES);
      body.send(SMALL_BODY_BYTES);
      const first = 2 * (SMALL_BODY_BYTES + 1000);
      expect(await inHand(first)).toBe(first);
      // ~10 kB fits beside it.
      expect((await post(batch(10, 'p'))).status).toBe(200);
      body.send(70_000);
      const second = 2 * (SMALL_BODY_BYTES + 71_000);
      expect(await inHand(second)).toBe(second);
      // ~39 kB does not: 273,072 + 39k is past the 300 kB budget.
      expect((await post(batch(40, 'q'))).status).toBe(503);
      expect(await body.finish()).toBe(200);
      expect(await metric('hogbase_capture_body_bytes_in_hand')).toBe(0);
      expect(await storedTags()).toEqual([...Array(200).fill('c'), ...Array(10).fill('p')]);
    }));

  test('a chunked body that finds no room for more once past the small size is answered 503, and what it held is given back', () =>
    // Two small bodies fit; one grown to twice its first 66,536 bytes does not fit beside the other.
    withBudget(
      0,
      async ({ batch, chunked, inHand, metric, storedTags }) => {
        const small = chunked(batch(20, 's'));
        small.send(1000);
        expect(await inHand(SMALL_BODY_BYTES)).toBe(SMALL_BODY_BYTES);
        const large = chunked(batch(200, 'l'));
        large.send(SMALL_BODY_BYTES + 1000);
        const refused = await large.response;
        expect([refused.status, refused.headers.get('retry-after')]).toEqual([503, '1']);
        // Only the small body's room is left, until it is answered.
        expect([await metric('hogbase_capture_body_bytes_in_hand'), await metric('hogbase_capture_bodies_refused_total')]).toEqual([SMALL_BODY_BYTES, 1]);
        expect(await small.finish()).toBe(200);
        expect(await metric('hogbase_capture_body_bytes_in_hand')).toBe(0);
        expect(await storedTags()).toEqual(Array(20).fill('s'));
      },
      150_000,
    ));

  test('a chunked body that says it is compressed is counted at eight times the small size from the start, and stored', () =>
    withBudget(
      0,
      async ({ batch, chunked, metric, storedTags }) => {
        const gzipped = gzipSync(batch(20, 'z'));
        expect(gzipped.length).toBeLessThan(SMALL_BODY_BYTES);
        const body = chunked(gzipped, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
        body.send(100);
        expect(await eventually(() => metric('hogbase_capture_body_bytes_in_hand'), (n) => n > 0, 5_000)).toBe(8 * SMALL_BODY_BYTES);
        expect(await body.finish()).toBe(200);
        expect(await metric('hogbase_capture_body_bytes_in_hand')).toBe(0);
        expect(await storedTags()).toEqual(Array(20).fill('z'));
      },
      1_000_000,
    ));

  test('with a wait allowed, a gzip body found by its bytes waits for room beside a plain body and both are stored', () =>
    withBudget(60_000, async ({ batch, post, storedTags }) => {
      const { gzipped, plain } = gzipAndPlain(batch);
      const answers = await Promise.all([post(gzipped), post(plain)]);
      expect(answers.map((r) => r.status)).toEqual([200, 200]);
      expect(await storedTags()).toEqual([...Array(200).fill('g'), ...Array(100).fill('p')]);
    }));

  test('with a wait allowed, every request is answered 200 in turn and all their events are stored', () =>
    withBudget(60_000, async ({ batch, post, storedTags }) => {
      const answers = await Promise.all(['a', 'b', 'c', 'd'].map((tag) => post(batch(200, tag))));
      expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200]);
      expect(await storedTags()).toEqual(['a', 'b', 'c', 'd'].flatMap((tag) => Array(200).fill(tag)));
    }));
});
