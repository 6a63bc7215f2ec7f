import { afterEach, describe, expect, test } from 'bun:test';
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { hotValuesOf, type StoredEventRow } from '../../../src/core/events/columns';
import { encodePlacedLines } from '../../../src/storage/events/log/row-lines';
import type { IntakeContext } from '../../../src/storage/events';
import { listDeadLetters, type EventStoreOptions } from '../../../src/storage/events';
import { makeEvent, openHarness, saturate, until, uuidsOf, type Harness } from './helpers';

/**
 * Capture requests logged as intake frames: answered once durable, turned into rows behind the
 * answer (in memory while memos are kept, from the log otherwise), replayed after a crash, and
 * dead-lettered when processing throws. The processor here is a stand-in for the real pipeline
 * (src/pipeline, tested through the app): one row per event, uuid from the event.
 */

let h: Harness | null = null;
afterEach(async () => {
  await h?.cleanup();
  h = null;
});

interface Raw {
  uuid: string;
  event: string;
  distinct_id: string;
}

const calls: Array<{ fromMemo: boolean; events: number }> = [];
let failOn: string | null = null;

const toRow = (ctx: IntakeContext, e: Raw, i: number): StoredEventRow => {
  const properties = { i, via: 'intake' };
  return {
    uuid: e.uuid,
    teamId: ctx.teamId,
    event: e.event,
    distinctId: e.distinct_id,
    personId: null,
    properties: JSON.stringify(properties),
    timestamp: ctx.receivedAt + i,
    createdAt: ctx.receivedAt,
    elementsChain: '',
    hot: hotValuesOf(properties),
  };
};

/** Main-thread time each processed request costs (a busy wait), for the saturation tests. */
let costMs = 0;

/** While set, processing waits for it (requests stay logged, not processed). */
let gate: Promise<void> | null = null;

const processIntake: NonNullable<EventStoreOptions['intake']> = async (ctx, parsed, text) => {
  if (gate) await gate;
  for (const until = performance.now() + costMs; performance.now() < until; );
  const events = (parsed ?? (JSON.parse(text ?? '') as { batch: Raw[] }).batch) as Raw[];
  calls.push({ fromMemo: parsed !== null, events: events.length });
  if (failOn && events.some((e) => e.distinct_id === failOn)) throw new Error(`cannot process ${failOn}`);
  const rows = events.filter((e) => e.event !== '').map((e, i) => toRow(ctx, e, i));
  const span: [number, number] | null = rows.length ? [ctx.receivedAt, ctx.receivedAt + rows.length - 1] : null;
  return { teamId: ctx.teamId, lines: encodePlacedLines(rows), rows: rows.length, uuids: rows.map((r) => r.uuid), span };
};

const uuid = (n: number) => `00000000-0000-7000-8000-${String(n).padStart(12, '0')}`;
const rawEvents = (from: number, n: number, who = 'u'): Raw[] => Array.from({ length: n }, (_, i) => ({ uuid: uuid(from + i), event: 'e', distinct_id: `${who}-${from + i}` }));

async function capture(hh: Harness, events: Raw[], teamId = 1): Promise<void> {
  const text = JSON.stringify({ api_key: 'k', batch: events });
  await hh.store.appendIntake({
    context: { teamId, receivedAt: Date.UTC(2025, 0, 1), ip: null, anonymizeIps: false, sentAt: null, engage: false },
    body: text,
    events: events.length,
    parsed: events,
    distinctIds: events.map((e) => e.distinct_id),
  });
}

const open = (more: Partial<EventStoreOptions> = {}) => openHarness({ intake: processIntake, ...more });

describe('intake', () => {
  test('acknowledged requests become rows in order, processed from memory, visible to queries', async () => {
    calls.length = 0;
    h = await open({ bufferMaxAgeMs: 60_000 });
    await capture(h, rawEvents(0, 3));
    await capture(h, [...rawEvents(3, 2), { uuid: uuid(99), event: '', distinct_id: 'dropped' }]);
    // Persons-visibility wait: returns once the request naming this id is processed, without a seal.
    await h.store.awaitIntake(1, ['u-4'], 5_000);
    expect(h.store.stats().walSegments).toBe(1); // still the active segment
    expect(calls).toEqual([{ fromMemo: true, events: 3 }, { fromMemo: true, events: 3 }]);
    expect(await uuidsOf(h)).toEqual([0, 1, 2, 3, 4].map(uuid));
    // Sealed and loaded without reading the log file back: every frame was done from memory.
    expect(h.store.stats().segmentsReadBack).toBe(0);
  });

  test('a query waits a short bound (0.5 s by default) for its project\'s unloaded events, then reads what is loaded; the rest follows once loaded', async () => {
    let release!: () => void;
    const stalled = new Promise<void>((resolve) => (release = resolve));
    let stall = false;
    h = await open({ bufferMaxAgeMs: 60_000, hooks: { beforeLoad: () => (stall ? stalled : undefined) } });
    await capture(h, rawEvents(0, 3));
    expect(await uuidsOf(h)).toEqual([0, 1, 2].map(uuid));
    stall = true;
    await capture(h, rawEvents(3, 2));
    // The load of the second request hangs: the query answers anyway (waiting 15 s, as it did,
    // would outlast this test's 5 s limit), without the unloaded events.
    expect(await uuidsOf(h)).toEqual([0, 1, 2].map(uuid));
    release();
    stall = false;
    expect(await uuidsOf(h)).toEqual([0, 1, 2, 3, 4].map(uuid));
  });

  test('behind a load, a query whose events could not be loaded within its bound at the recent speed reads what is loaded at once, without cutting the log\'s segment short for them', async () => {
    const props = { blob: 'x'.repeat(1000) };
    const big = (from: number, n: number): Raw[] => rawEvents(from, n).map((e) => ({ ...e, properties: props }) as Raw);
    const scenario = async (visibilityTimeoutMs: number) => {
      let release!: () => void;
      let stalled: Promise<void> | null = new Promise<void>((resolve) => (release = resolve));
      let loads = 0;
      h = await open({ bufferMaxAgeMs: 60_000, visibilityTimeoutMs, hooks: { beforeLoad: () => (loads++, stalled ?? undefined) } });
      const hh = h;
      await capture(hh, rawEvents(0, 3));
      const draining = hh.store.flush(); // its load starts, and hangs
      await until(() => loads === 1);
      // ~110 KB more in the active segment, behind the hanging load: milliseconds at any speed the store measures.
      await capture(hh, big(3, 100));
      const query = uuidsOf(hh);
      stalled = null;
      release();
      const seen = (await query).length;
      await draining;
      await capture(hh, rawEvents(103, 1));
      await hh.store.flush();
      const total = (await uuidsOf(hh)).length;
      await hh.cleanup();
      h = null;
      return { seen, loads, total };
    };
    // A bound shorter than that: the loaded rows (none yet); the segment was not sealed for the
    // query, so the last request's event joins it and one more load takes both.
    expect(await scenario(1)).toEqual({ seen: 0, loads: 2, total: 104 });
    // A bound that covers it: sealed for the query, which waits for both loads and sees it all.
    expect(await scenario(60_000)).toEqual({ seen: 103, loads: 3, total: 104 });
  });

  test('a query reads what is loaded once its bound has passed when the log cannot flush (a stalled disk)', async () => {
    let release = () => {};
    let stalled: Promise<void> | null = null;
    let syncs = 0;
    h = await open({ bufferMaxAgeMs: 60_000, visibilityTimeoutMs: 50, hooks: { beforeLogSync: () => (syncs++, stalled ?? undefined) } });
    const hh = h;
    await capture(hh, rawEvents(0, 3));
    await hh.store.flush();
    await capture(hh, rawEvents(3, 2)); // acknowledged, in the active segment
    stalled = new Promise((resolve) => (release = resolve));
    const before = syncs;
    const pending = capture(hh, rawEvents(5, 1)); // its flush hangs
    await until(() => syncs > before);
    let answered: string[] | null = null;
    const query = uuidsOf(hh).then((u) => (answered = u));
    // Answered while the disk is still stalled: the rows loaded before it (sealing the active
    // segment waits for the flush in flight).
    await until(() => answered !== null);
    expect(answered as string[] | null).toEqual([0, 1, 2].map(uuid));
    stalled = null;
    release();
    await Promise.all([pending, query]);
    await hh.store.flush();
    expect(await uuidsOf(hh)).toEqual([0, 1, 2, 3, 4, 5].map(uuid));
  });

  test('a backlog is loaded in loads of at most loadMaxBytes of processed rows, all of it once', async () => {
    const loads: number[][] = [];
    let stalled: Promise<void> | null = null;
    const hooks = { beforeLoad: (segs: readonly { loadBytes?: number }[]) => (loads.push(segs.map((seg) => seg.loadBytes ?? -1)), stalled ?? undefined) };
    // Ten events a segment, each segment about the same processed bytes (ids of one width).
    h = await open({ bufferMaxAgeMs: 60_000, bufferMaxRows: 10, hooks });
    await capture(h, rawEvents(100, 10));
    await h.store.flush();
    const [[one]] = loads;
    expect(one).toBeGreaterThan(0);
    let release!: () => void;
    stalled = new Promise<void>((resolve) => (release = resolve));
    const limit = Math.floor(2.5 * one);
    await h.reopen({ intake: processIntake, bufferMaxAgeMs: 60_000, bufferMaxRows: 10, loadMaxBytes: limit, hooks });
    loads.length = 0;
    // The first load hangs while six more segments are logged and processed behind it.
    await capture(h, rawEvents(110, 10));
    await until(() => loads.length === 1);
    for (let k = 0; k < 6; k++) await capture(h, rawEvents(120 + 10 * k, 10));
    await until(() => h!.store.stats().walSegments >= 6);
    stalled = null;
    release();
    await h.store.flush();
    // Segments of ~`one` bytes: two a load fit under 2.5 times that, three do not.
    expect(loads.map((l) => l.length)).toEqual([1, 2, 2, 2]);
    for (const l of loads.flat()) expect(Math.abs(l - one)).toBeLessThan(0.05 * one);
    expect(await uuidsOf(h)).toEqual(Array.from({ length: 80 }, (_, i) => uuid(100 + i)));
  });

  test('small loads leave the load speed a query\'s wait is judged by as it was (their time is mostly a load\'s fixed cost)', async () => {
    let loads = 0;
    h = await open({ bufferMaxAgeMs: 60_000, visibilityTimeoutMs: 10, hooks: { beforeLoad: () => void loads++ } });
    for (let k = 0; k < 12; k++) {
      await capture(h, rawEvents(k, 1));
      await h.store.flush();
    }
    // ~110 KB: a few milliseconds at the speed assumed at start, many more at what these loads measured.
    await capture(h, rawEvents(12, 100).map((e) => ({ ...e, properties: { blob: 'x'.repeat(1000) } }) as Raw));
    const before = loads;
    await uuidsOf(h);
    await capture(h, rawEvents(112, 1));
    await h.store.flush();
    // Sealed for the query: its segment and the last request's are two loads.
    expect({ loads: loads - before, total: (await uuidsOf(h)).length }).toEqual({ loads: 2, total: 113 });
  });

  test('a request logged with neither its parsed events nor prepared rows is processed from the log; a flag check for its user seals the segment for it', async () => {
    calls.length = 0;
    h = await open({ bufferMaxAgeMs: 60_000 });
    const events = rawEvents(0, 3);
    await h.store.appendIntake({
      context: { teamId: 1, receivedAt: Date.UTC(2025, 0, 1), ip: null, anonymizeIps: false, sentAt: null, engage: false },
      body: new TextEncoder().encode(JSON.stringify({ api_key: 'k', batch: events })),
      events: 3,
      parsed: null,
      distinctIds: events.map((e) => e.distinct_id),
    });
    await h.store.awaitIntake(1, ['u-2'], 5_000);
    expect(calls).toEqual([{ fromMemo: false, events: 3 }]);
    expect(await uuidsOf(h)).toEqual([0, 1, 2].map(uuid));
    expect(h.store.stats().segmentsReadBack).toBe(1);
  });

  test('relaxed: requests made in one turn of the event loop (as one poll\'s requests are) share one write, and each is stored', async () => {
    h = await open({ durability: 'relaxed', bufferMaxAgeMs: 60_000 });
    const hh = h;
    // Each request from its own callback, as the server runs each request read in one poll.
    const requests = Array.from({ length: 20 }, (_, k) => new Promise<void>((resolve, reject) => setImmediate(() => capture(hh, rawEvents(k * 2, 2)).then(resolve, reject))));
    await Promise.all(requests);
    expect(hh.store.stats().logWrites).toBe(1);
    expect(await uuidsOf(hh)).toEqual(Array.from({ length: 40 }, (_, n) => uuid(n)));
  });

  test('processed rows are loaded without a JSON check, a row frame beside them with one: its bad row is dead-lettered, the rest stored in Parquet', async () => {
    h = await open({ bufferMaxAgeMs: 60_000, directMinRows: 1 });
    await capture(h, rawEvents(0, 3));
    await h.store.append([makeEvent(50, { properties: '{"broken": ' })]);
    await capture(h, rawEvents(3, 2));
    await h.store.flush();
    expect(await uuidsOf(h)).toEqual([0, 1, 2, 3, 4].map(uuid));
    const letters = await listDeadLetters(h.dir);
    expect(letters.map((l) => ({ source: l.source, rows: l.rows, message: l.errors?.[0].message }))).toEqual([{ source: 'rows', rows: 1, message: 'properties are not valid JSON' }]);
  });

  test('a segment of many frames (processed rows and logged row frames between them) is copied whole, in order, with each row its own data', async () => {
    h = await open({ bufferMaxAgeMs: 60_000, maxMemoBytes: 64 * 1024 });
    const hh = h;
    // 6 requests of 1,000 events: 3 frames of processed rows (2,000 a frame, encoded into reused
    // buffers), some parsed again from the log past the memo budget; row frames logged between.
    for (let k = 0; k < 6; k++) {
      await capture(hh, rawEvents(k * 1000, 1000));
      if (k % 2 === 0) await hh.store.append([makeEvent(90_000 + k, { uuid: uuid(90_000 + k) })]);
    }
    await hh.store.flush();
    const rel = await hh.store.eventsRelation(1);
    const rows = await hh.db.query<{ uuid: string; properties: string }>(`SELECT uuid, properties FROM ${rel.sql} AS events ORDER BY uuid`, rel.params);
    const expected = [...Array.from({ length: 6000 }, (_, n) => uuid(n)), uuid(90_000), uuid(90_002), uuid(90_004)];
    expect(rows.map((r) => r.uuid)).toEqual(expected);
    for (const r of rows.slice(0, 6000)) {
      const n = Number(r.uuid.slice(-12));
      expect(JSON.parse(r.properties)).toEqual({ i: n % 1000, via: 'intake' });
    }
  });

  test('without memos (memory budget 0) every request is parsed again from the log, same rows', async () => {
    calls.length = 0;
    h = await open({ bufferMaxAgeMs: 60_000, maxMemoBytes: 0 });
    await capture(h, rawEvents(0, 4));
    await capture(h, rawEvents(4, 4), 2);
    expect(await uuidsOf(h)).toEqual([0, 1, 2, 3].map(uuid));
    expect(await uuidsOf(h, 2)).toEqual([4, 5, 6, 7].map(uuid));
    expect(calls.every((c) => !c.fromMemo)).toBe(true);
  });

  test('requests still in the log after a crash are processed by the next open, exactly once', async () => {
    h = await open({ bufferMaxAgeMs: 60_000, hooks: { beforeLoad: () => new Promise(() => undefined) } });
    await capture(h, rawEvents(0, 50));
    await capture(h, rawEvents(50, 50));
    // The process "dies": rows were processed in memory, never loaded. Reopen on the same files.
    h.store = { close: async () => undefined } as typeof h.store;
    await h.reopen({ intake: processIntake, hooks: {} });
    expect(await uuidsOf(h)).toEqual(Array.from({ length: 100 }, (_, i) => uuid(i)));
    expect((await readdir(join(h.dir, 'events', 'wal'))).filter((n) => n.endsWith('.proc'))).toEqual([]);
  });

  test('a request whose processing throws goes to the dead letters whole; replay stores it once', async () => {
    failOn = 'bad-7';
    h = await open({ bufferMaxAgeMs: 60_000 });
    await capture(h, rawEvents(0, 5));
    await capture(h, rawEvents(7, 1, 'bad'));
    await capture(h, rawEvents(10, 5));
    expect(await uuidsOf(h)).toEqual([0, 1, 2, 3, 4, 10, 11, 12, 13, 14].map(uuid));
    const dead = await h.store.listDeadLetters();
    expect(dead.map((d) => ({ source: d.source, rows: d.rows, reason: d.reason }))).toEqual([
      { source: 'intake', rows: 1, reason: expect.stringContaining('cannot process bad-7') },
    ]);
    failOn = null;
    const replay = await h.store.replayDeadLetters();
    expect(replay.rows).toBe(1);
    expect(await h.store.listDeadLetters()).toEqual([]);
    expect(await uuidsOf(h)).toEqual([0, 1, 2, 3, 4, 7, 10, 11, 12, 13, 14].map(uuid));
  });

  test('a segment that cannot be processed (its copy cannot be written) goes to the dead letters whole after the retries', async () => {
    h = await open({ bufferMaxAgeMs: 60_000, maxFlushAttempts: 2, flushRetryMs: 10 });
    await capture(h, rawEvents(0, 3));
    const walDir = join(h.dir, 'events', 'wal');
    const [segment] = (await readdir(walDir)).filter((n) => n.endsWith('.wal'));
    await mkdir(join(walDir, `${segment}.proc`)); // writing the processed copy now fails (EISDIR)
    await capture(h, rawEvents(3, 2));
    await h.store.flush();
    const dead = await h.store.listDeadLetters();
    expect(dead.map((d) => ({ source: d.source, reason: d.reason }))).toEqual([{ source: 'segment', reason: expect.stringContaining('Processing WAL segment') }]);
    expect(await uuidsOf(h)).toEqual([]);
    await capture(h, rawEvents(10, 1)); // later requests are not held behind it
    expect(await uuidsOf(h)).toEqual([uuid(10)]);
    expect(await readdir(walDir)).not.toContain(`${segment}.proc`); // the derived copy went with it
    await h.store.replayDeadLetters();
    expect(await uuidsOf(h)).toEqual([0, 1, 2, 3, 4, 10].map(uuid));
  });

  /** Saturation by one-event capture requests; progress = requests processed. */
  const saturateCapture = (hh: Harness, ms: number, during?: () => void) =>
    saturate(ms, (i) => capture(hh, rawEvents(i, 1)), () => calls.length, { during });

  test('while capture requests saturate the server, processing keeps pace with them (it no longer stands aside), from memory', async () => {
    calls.length = 0;
    costMs = 1;
    try {
      // Relaxed: the rounds' pace (and the saturation it makes) does not depend on flush times.
      h = await open({ bufferMaxAgeMs: 60_000, durability: 'relaxed' });
      const load = await saturateCapture(h, 500);
      // Standing aside until 512 MiB were behind, it processed at most ~4 requests here.
      expect(load.atEnd - load.atStart).toBeGreaterThan(50);
      await h.store.awaitIntake(1, null, 20_000);
      expect(calls.length).toBe(load.sent);
      expect((await uuidsOf(h)).length).toBe(load.sent);
      // Processed as they come, each from its memo: none is read back from the log.
      expect(calls.filter((c) => !c.fromMemo)).toEqual([]);
    } finally {
      costMs = 0;
    }
  });

  test('a flag check during a saturating load is answered once its request is processed, before the load ends', async () => {
    calls.length = 0;
    costMs = 1;
    try {
      h = await open({ bufferMaxAgeMs: 60_000 });
      const hh = h;
      let waited: Promise<void> | null = null;
      let answeredAt = 0;
      const load = await saturateCapture(h, 700, () => {
        const asked = performance.now();
        waited = hh.store.awaitIntake(1, ['u-20'], 5_000).then(() => void (answeredAt = performance.now() - asked));
      });
      await waited;
      expect(answeredAt).toBeGreaterThan(0);
      expect(answeredAt).toBeLessThan(600); // before the load ends
      expect(load.atEnd).toBeGreaterThanOrEqual(21);
    } finally {
      costMs = 0;
    }
  });

  test('the distinct ids of processed requests are forgotten as processing goes, not kept until many pile up', async () => {
    h = await open({ bufferMaxAgeMs: 60_000 });
    for (let k = 0; k < 10; k++) await capture(h, [{ uuid: uuid(k), event: 'e', distinct_id: `visitor-${k}` }]);
    await h.store.awaitIntake(1, ['visitor-9'], 5_000);
    expect(h.store.stats().pendingDistinctIds).toBe(0);
    await capture(h, [{ uuid: uuid(10), event: 'e', distinct_id: 'visitor-10' }]);
    expect(h.store.stats().pendingDistinctIds).toBeLessThanOrEqual(1);
    expect(await uuidsOf(h)).toEqual(Array.from({ length: 11 }, (_, k) => uuid(k)));
  });

  test('past maxPendingIds a flag check waits for everything logged; once that is processed, ids are remembered one by one again', async () => {
    let release!: () => void;
    gate = new Promise<void>((resolve) => (release = resolve));
    try {
      h = await open({ bufferMaxAgeMs: 60_000, maxPendingIds: 5 });
      const pair = (n: number, who: string) => [
        { uuid: uuid(n), event: 'e', distinct_id: `${who}-a` },
        { uuid: uuid(n + 1), event: '$identify', distinct_id: `${who}-b` },
      ];
      await capture(h, pair(0, 'one'));
      await capture(h, pair(2, 'two'));
      expect(h.store.stats().pendingDistinctIds).toBe(4);
      expect(h.store.intakePending(1, ['stranger'])).toBe(false);
      expect(h.store.intakePending(1, ['two-b'])).toBe(true);
      // 4 remembered + 2 more > 5: this request's ids are not remembered, so any id must wait.
      await capture(h, pair(4, 'three'));
      expect(h.store.stats().pendingDistinctIds).toBe(4);
      expect(h.store.intakePending(1, ['stranger'])).toBe(true);
      release();
      gate = null;
      await h.store.awaitIntake(1, ['stranger'], 5_000);
      expect(h.store.intakePending(1, ['stranger'])).toBe(false);
      expect(h.store.stats().pendingDistinctIds).toBe(0);
      gate = new Promise<void>((resolve) => (release = resolve));
      await capture(h, pair(6, 'four'));
      expect(h.store.stats().pendingDistinctIds).toBe(2);
      expect(h.store.intakePending(1, ['stranger'])).toBe(false);
      expect(h.store.intakePending(1, ['four-a'])).toBe(true);
    } finally {
      release();
      gate = null;
    }
    await h.store.awaitIntake(1, null, 5_000);
    expect(await uuidsOf(h)).toEqual(Array.from({ length: 8 }, (_, k) => uuid(k)));
  });
});
