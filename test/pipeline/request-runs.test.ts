import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../src/logger';
import type { PersonInput } from '../../src/pipeline/person-input';
import { prepareRequests, prepareRows, withPipeline, newUuidsOf, type RowPreparer } from '../../src/pipeline';
import { openStorage, type Storage } from '../../src/storage';
import type { IntakeContext, LoggedRequest } from '../../src/storage/events';
import { createIngestParser, type IngestParserPool } from '../../src/workers/ingest-parser';

/**
 * Small capture requests are kept as their bodies and processed in runs: consecutive requests of
 * one project prepared as one in the parser thread (`ProcessIntake.run`), their persons applied
 * on the main thread. A run must store what each request processed alone stores, and a request
 * that fails must go to the dead letters alone, as it would have.
 */
const dirs: string[] = [];
let pool: IngestParserPool;
beforeAll(() => {
  pool = createIngestParser(1, 1024 * 1024, silentLogger);
});
afterAll(async () => {
  await pool.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const T0 = Date.UTC(2026, 10, 20, 10);
const uuid = (n: number) => `01900000-0000-7000-8000-${String(n).padStart(12, '0')}`;

const context = (teamId: number, k: number): IntakeContext => ({
  teamId,
  receivedAt: T0 + k * 1000,
  ip: `203.0.113.${k % 250}`,
  anonymizeIps: false,
  sentAt: k % 3 === 0 ? T0 + k * 1000 - 500 : null,
  engage: false,
  uuidSeed: `00000000000000${(k % 256).toString(16).padStart(2, '0')}`,
});

/** Request k: one or two events, some without a uuid (named from the request's seed), some on another day, an `$identify`, a nameless one dropped. */
function requestEvents(k: number): Array<Record<string, unknown>> {
  const events: Array<Record<string, unknown>> = [
    {
      event: k % 5 === 0 ? '$identify' : `event-${k % 4}`,
      distinct_id: `user-${k % 9}`,
      ...(k % 4 === 1 ? {} : { uuid: uuid(k) }),
      timestamp: new Date(T0 - (k % 7 === 0 ? 86_400_000 : 0) + k).toISOString(),
      properties: {
        $browser: k % 2 ? 'Firefox' : 'Chrome',
        n: k,
        // Text of more than one byte a character, in bodies logged as text and as bytes.
        ...(k % 4 === 2 ? { name: 'Zoë 🙂' } : {}),
        [`only_${k % 3}`]: true,
        ...(k % 5 === 0 ? { $anon_distinct_id: `anon-${k}`, $set: { plan: `p${k % 3}` } } : {}),
      },
    },
  ];
  if (k % 6 === 0) events.push({ distinct_id: `user-${k}`, properties: { dropped: true } });
  return events;
}

const bodyOf = (k: number) => JSON.stringify({ batch: requestEvents(k) });

describe('requests prepared as runs', () => {
  test('a run is prepared as its requests are alone, joined in order', () => {
    const ks = [0, 1, 2, 5, 6, 7];
    const alone = ks.map((k) => prepareRows(context(1, k), requestEvents(k), newUuidsOf(context(1, k))));
    const joined = prepareRequests(ks.map((k) => ({ ctx: context(1, k), events: requestEvents(k), newUuid: newUuidsOf(context(1, k)) })));
    expect(Buffer.from(joined.lines).toString()).toBe(alone.map((r) => Buffer.from(r.lines).toString()).join(''));
    expect(joined.rows).toBe(ks.length);
    expect(joined.uuids).toEqual(alone.flatMap((r) => r.uuids));
    expect(joined.people).toEqual(alone.flatMap((r) => r.people as PersonInput[]));
    expect(joined.dropped).toEqual({ missing_event_name: 2 });
    expect(joined.span).toEqual([Math.min(...alone.map((r) => r.span![0])), Math.max(...alone.map((r) => r.span![1]))]);
    // Request 7's event is on the day before: keys by day, as each request's rows have them.
    const keysOf = (rows: typeof alone) => {
      const byDay = new Map<number, Set<string>>();
      for (const r of rows) for (const [day, keys] of r.propertyKeys) for (const key of keys) byDay.set(day, (byDay.get(day) ?? new Set()).add(key));
      return [...byDay].map(([day, keys]) => [day, [...keys].sort()]).sort();
    };
    expect(keysOf([joined])).toEqual(keysOf(alone));
    expect(keysOf([joined]).length).toBe(2);
  });

  async function storeRequests(preparer: RowPreparer | undefined, ks: readonly number[], teamOf: (k: number) => number) {
    const dataDir = await mkdtemp(join(tmpdir(), 'pipeline-runs-'));
    dirs.push(dataDir);
    const storage = await openStorage(withPipeline({ dataDir }, preparer));
    // Not awaited one by one: requests made durable together are processed together.
    await Promise.all(
      ks.map((k) => {
        const body = bodyOf(k);
        const parsed = JSON.parse(body).batch;
        return storage.events.appendIntake({ context: context(teamOf(k), k), body: k % 2 ? new TextEncoder().encode(body) : body, events: parsed.length, parsed, distinctIds: [] });
      }),
    );
    await storage.events.flush();
    return storage;
  }

  async function storedRows(storage: Storage, teamId: number) {
    const relation = await storage.events.eventsRelation(teamId);
    const rows: Array<Record<string, unknown>> = [];
    const sql = `SELECT uuid::VARCHAR AS uuid, event, distinct_id, person_id::VARCHAR AS person_id, properties, timestamp::VARCHAR AS timestamp, created_at::VARCHAR AS created_at FROM ${relation.sql} AS events ORDER BY uuid`;
    for await (const chunk of storage.events.streamQuery(sql, relation.params)) rows.push(...chunk);
    await storage.persons.ensureLoaded(teamId);
    // Each row carries the person its distinct id has; person ids are random, so compared as that.
    for (const r of rows) {
      expect(r.person_id).toBe(storage.persons.findByDistinctId(teamId, String(r.distinct_id))!.uuid);
      r.person_id = 'its person';
    }
    return rows;
  }

  test('requests of two projects, processed in runs in the parser thread, store what the main thread stores, each row in its project with its person', async () => {
    const runs: number[] = [];
    const preparer: RowPreparer = {
      prepareBody: (ctx, body) => pool.prepareBody(ctx, body),
      prepareRun: (requests) => (runs.push(requests.length), pool.prepareRun(requests)),
    };
    const ks = Array.from({ length: 60 }, (_, k) => k);
    const teamOf = (k: number) => (k % 10 < 7 ? 1 : 2);
    const viaRuns = await storeRequests(preparer, ks, teamOf);
    const local = await storeRequests(undefined, ks, teamOf);
    try {
      for (const teamId of [1, 2]) {
        const [a, b] = [await storedRows(viaRuns, teamId), await storedRows(local, teamId)];
        expect(a.length).toBe(ks.filter((k) => teamOf(k) === teamId).length);
        expect(a).toEqual(b);
      }
      const person = (s: Storage) => s.persons.findByDistinctId(1, 'anon-5')?.properties;
      expect(person(viaRuns)).toEqual(person(local)!);
      expect(person(viaRuns)).toMatchObject({ plan: 'p2' });
      // Every request went through a run, and runs held several (a run stops where the project changes).
      expect(runs.reduce((n, r) => n + r, 0)).toBe(ks.length);
      expect(runs.length).toBeLessThan(ks.length / 2);
    } finally {
      await viaRuns.close();
      await local.close();
    }
  }, 60_000);

  test('a body of a run that cannot be read goes to the dead letters alone; the rest of the run is stored', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'pipeline-runs-'));
    dirs.push(dataDir);
    let largest = 0;
    const storage = await openStorage(
      withPipeline({ dataDir }, { prepareBody: (ctx, body) => pool.prepareBody(ctx, body), prepareRun: (r) => ((largest = Math.max(largest, r.length)), pool.prepareRun(r)) }),
    );
    try {
      const appends = [1, 2, 3, 4, 5].map((k) => {
        // Request 3's logged body is not JSON (its parsed events were good: the memo is the body).
        const body = k === 3 ? '{"batch": [' : bodyOf(k);
        const parsed = requestEvents(k);
        return storage.events.appendIntake({ context: context(1, k), body, events: parsed.length, parsed, distinctIds: [] });
      });
      await Promise.all(appends);
      await storage.events.flush();
      expect(largest).toBeGreaterThan(1);
      const letters = await storage.events.listDeadLetters();
      expect(letters.map((d) => ({ source: d.source, rows: d.rows }))).toEqual([{ source: 'intake', rows: 1 }]);
      expect(letters[0].reason).toContain('JSON');
      const stored = await storedRows(storage, 1);
      expect(stored.map((r) => r.distinct_id).sort()).toEqual(['user-1', 'user-2', 'user-4', 'user-5']);
      expect(stored.map((r) => r.uuid)).toEqual(expect.arrayContaining([uuid(2), uuid(4)]));
      expect(stored.length).toBe(4);
    } finally {
      await storage.close();
    }
  }, 60_000);

  test('a run that fails as a whole sends each of its requests to the dead letters, and a replay stores each event once', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'pipeline-runs-'));
    dirs.push(dataDir);
    const failing: RowPreparer = { prepareBody: (ctx, body) => pool.prepareBody(ctx, body), prepareRun: () => Promise.reject(new Error('thread gone')) };
    const broken = await openStorage(withPipeline({ dataDir }, failing));
    const ks = [10, 11, 12, 13];
    await Promise.all(ks.map((k) => broken.events.appendIntake({ context: context(1, k), body: bodyOf(k), events: requestEvents(k).length, parsed: requestEvents(k), distinctIds: [] })));
    await broken.events.flush();
    const letters = await broken.events.listDeadLetters();
    // One a request (listed by when each was written, which may tie): each its request's events.
    expect(letters.map((d) => d.source)).toEqual(ks.map(() => 'intake'));
    expect(letters.map((d) => d.rows).sort()).toEqual(ks.map((k) => requestEvents(k).length).sort());
    expect(letters.every((d) => d.reason.includes('thread gone'))).toBe(true);
    expect(await storedRows(broken, 1)).toEqual([]);
    await broken.close();

    const healthy = await openStorage(withPipeline({ dataDir }, { prepareBody: (ctx, body) => pool.prepareBody(ctx, body), prepareRun: (r: readonly LoggedRequest[]) => pool.prepareRun(r) }));
    try {
      expect(await healthy.events.replayDeadLetters()).toMatchObject({ rows: 5 });
      await healthy.events.flush();
      const stored = await storedRows(healthy, 1);
      expect(stored.length).toBe(4);
      expect(new Set(stored.map((r) => r.uuid)).size).toBe(4);
      expect(stored.map((r) => r.distinct_id).sort()).toEqual(ks.map((k) => `user-${k % 9}`).sort());
    } finally {
      await healthy.close();
    }
  }, 60_000);
});
