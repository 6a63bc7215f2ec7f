import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { RedisClient } from 'bun';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWriter, DIED } from '../../src/cluster/writer';
import { AppError } from '../../src/errors';
import { uuidv7FromSeed } from '../../src/ids';
import { silentLogger } from '../../src/logger';
import { createIntakeProcessor } from '../../src/pipeline';
import { openClickHouse, type ClickHouse } from '../../src/storage/clickhouse/client';
import { countEvents, newestEvents } from '../../src/storage/clickhouse/events-table';
import { migrateClickHouse } from '../../src/storage/clickhouse/schema';
import type { IntakeContext } from '../../src/storage/events';
import { openRedisLog, type RedisLog } from '../../src/storage/log/redis-streams';
import { chdbClient, testDatabaseName } from '../helpers/clickhouse';
import { killRedis, REDIS_SKIP_REASON, redisAvailable, startRedis, type TestRedis } from '../helpers/redis';
import { createTestApp, type TestApp } from '../helpers/test-app';

const T0 = Date.UTC(2026, 10, 20, 12, 0, 0);
const CLIENT_UUID = '01a219da-5fd6-7749-8000-00000000abcd';

const run = redisAvailable ? describe : describe.skip;

run(`a cluster writer: Redis log → pipeline → ClickHouse${redisAvailable ? '' : ` (skipped: ${REDIS_SKIP_REASON})`}`, () => {
  let redis: TestRedis;
  let app: TestApp;
  let ch: ClickHouse;
  let log: RedisLog;
  let teamId: number;
  let prefix = 0;

  const context = (n: number): string => JSON.stringify({ teamId, receivedAt: T0 + n * 1000, ip: '10.0.0.1', anonymizeIps: false, sentAt: null, engage: false } satisfies IntakeContext);
  const append = (n: number, body: unknown) => log.append(0, { context: context(n), body: typeof body === 'string' ? body : JSON.stringify(body), events: 1 });
  const writer = (consumer: string, over: Partial<Parameters<typeof createWriter>[0]> = {}) =>
    createWriter({ consumer, log, ch, persons: app.deps.storage.persons, process: createIntakeProcessor(app.deps.storage.persons, app.deps.storage.seen).logged, logger: silentLogger, insertEveryMs: 0, ...over });

  beforeAll(async () => {
    redis = await startRedis();
    app = await createTestApp();
    teamId = app.account.project.id;
    ch = await openClickHouse({ client: await chdbClient(), database: testDatabaseName() });
    await migrateClickHouse(ch);
  });
  afterAll(async () => {
    await app?.close();
    await ch?.close();
    await killRedis(redis).catch(() => undefined);
  });

  test('processes the log in order into ClickHouse, persons merged, and acknowledges it', async () => {
    log = await openRedisLog({ url: redis.url, prefix: `w${++prefix}`, partitions: 1 });
    await append(1, [{ event: '$pageview', distinct_id: 'anon-1', properties: { $browser: 'Firefox' } }]);
    await append(2, { event: '$identify', distinct_id: 'user-1', properties: { $anon_distinct_id: 'anon-1', $set: { email: 'a@b.c' } } });
    await append(3, [{ event: 'signup', distinct_id: 'user-2', uuid: CLIENT_UUID }]);
    const w = writer('writer-a');
    expect(await w.pass()).toEqual({ taken: 3, entries: 3, rows: 3, deadLettered: 0, partitions: [0] });
    const rows = await newestEvents(ch, teamId, { limit: 10 });
    expect(rows.map((r) => [r.event, r.distinctId, r.timestamp])).toEqual([
      ['signup', 'user-2', T0 + 3000],
      ['$identify', 'user-1', T0 + 2000],
      ['$pageview', 'anon-1', T0 + 1000],
    ]);
    expect(rows[0]!.uuid).toBe(CLIENT_UUID);
    const persons = app.deps.storage.persons;
    const identified = persons.findByDistinctId(teamId, 'user-1')!;
    expect(persons.findByDistinctId(teamId, 'anon-1')!.uuid).toBe(identified.uuid);
    expect(identified.properties.email).toBe('a@b.c');
    expect([rows[1]!.personId, rows[2]!.personId]).toEqual([identified.uuid, identified.uuid]);
    expect(rows[0]!.personId).toBe(persons.findByDistinctId(teamId, 'user-2')!.uuid);
    expect(await w.pass()).toEqual({ taken: 0, entries: 0, rows: 0, deadLettered: 0, partitions: [0] });
    await w.release();
  });

  test('a writer that dies after its insert, before its acknowledgement: the next holder writes the same rows, read once', async () => {
    const before = await countEvents(ch, teamId);
    await append(4, [{ event: 'a', distinct_id: 'user-3' }, { event: 'b', distinct_id: 'user-3' }]);
    const dying = writer('writer-b', { log: { ...log, ack: () => Promise.reject(new Error('killed')) } });
    await expect(dying.pass()).rejects.toThrow('killed');
    const firstRun = (await newestEvents(ch, teamId, { limit: 2 })).map((r) => r.uuid);
    expect(await countEvents(ch, teamId)).toBe(before + 2);
    // Its lease runs out (deleted here, as its time to live would).
    const raw = new RedisClient(redis.url);
    await raw.send('DEL', [`w${prefix}:lease:0`]);
    raw.close();
    const next = writer('writer-c');
    expect(await next.pass()).toEqual({ taken: 1, entries: 1, rows: 2, deadLettered: 0, partitions: [0] });
    expect(await countEvents(ch, teamId)).toBe(before + 2);
    expect((await newestEvents(ch, teamId, { limit: 2 })).map((r) => r.uuid)).toEqual(firstRun);
    expect(await next.pass()).toEqual({ taken: 0, entries: 0, rows: 0, deadLettered: 0, partitions: [0] });
    await next.release();
  });

  test('an entry that keeps failing goes to the dead letters; the ones behind it are written', async () => {
    const before = await countEvents(ch, teamId);
    await append(5, '[{"event": "broken", ');
    await append(6, [{ event: 'after', distinct_id: 'user-4' }]);
    const w = writer('writer-d', { maxFailures: 2 });
    expect(await w.pass()).toEqual({ taken: 0, entries: 0, rows: 0, deadLettered: 0, partitions: [0] });
    expect(await w.pass()).toEqual({ taken: 1, entries: 1, rows: 1, deadLettered: 1, partitions: [0] });
    expect((await newestEvents(ch, teamId, { limit: 1 })).map((r) => r.event)).toEqual(['after']);
    expect(await countEvents(ch, teamId)).toBe(before + 1);
    const letters = await log.listDeadLetters();
    expect(letters.map((l) => [l.body, l.deliveries])).toEqual([['[{"event": "broken", ', 2]]);
    expect(letters[0]!.reason).toContain('JSON');
    await w.release();
    log.close();
  });

  test('passes that fail elsewhere (ClickHouse away, PostgreSQL away) count for nothing: only the entry\'s own failures send it to the dead letters', async () => {
    log = await openRedisLog({ url: redis.url, prefix: `w${++prefix}`, partitions: 1 });
    const before = await countEvents(ch, teamId);
    await append(7, [{ event: 'through an outage', distinct_id: 'user-5' }]);
    const away = new Proxy(ch, { get: (target, key) => (key === 'insertTabSeparated' ? () => Promise.reject(new Error('ClickHouse: connection refused')) : Reflect.get(target, key)) });
    const processor = createIntakeProcessor(app.deps.storage.persons, app.deps.storage.seen).logged;
    // PostgreSQL away three times, then one failure of the entry itself, then it goes through.
    const outcomes: Array<Error | null> = [
      ...Array.from({ length: 3 }, () => new AppError('unavailable', 'The management database is not available.')),
      new Error('one failure of its own'),
    ];
    const flaky: typeof processor = (...args) => {
      const failure = outcomes.shift();
      return failure ? Promise.reject(failure) : processor(...args);
    };
    const w = writer('writer-e', { maxFailures: 2, process: flaky });
    for (let i = 0; i < 3; i++) await expect(writer('writer-e', { ch: away, maxFailures: 2 }).pass()).rejects.toThrow('ClickHouse: connection refused');
    for (let i = 0; i < 3; i++) await expect(w.pass()).rejects.toThrow('management database');
    expect(await w.pass()).toEqual({ taken: 0, entries: 0, rows: 0, deadLettered: 0, partitions: [0] });
    expect(await w.pass()).toEqual({ taken: 1, entries: 1, rows: 1, deadLettered: 0, partitions: [0] });
    expect(await log.listDeadLetters()).toEqual([]);
    expect(await countEvents(ch, teamId)).toBe(before + 1);
    // Its failure count went with its acknowledgement.
    const raw = new RedisClient(redis.url);
    expect(Number(await raw.send('EXISTS', [`w${prefix}:failures:0`]))).toBe(0);
    raw.close();
    await w.release();
    log.close();
  });

  test('an entry that kills the writer process: after its third death with it the next writer moves it to the dead letters, and writes the others once', async () => {
    log = await openRedisLog({ url: redis.url, prefix: `w${++prefix}`, partitions: 1 });
    const uuid = (n: number) => `01a219da-5fd6-7749-8000-0000000000${String(n).padStart(2, '0')}`;
    for (const n of [1, 2]) await append(10 + n, [{ event: `good-${n}`, distinct_id: 'user-6', uuid: uuid(n) }]);
    await append(13, [{ event: 'poison', distinct_id: 'user-6', properties: { poison: 'POISON-PILL' } }]);
    await append(14, [{ event: 'good-3', distinct_id: 'user-6', uuid: uuid(3) }]);
    const outDir = mkdtempSync(join(tmpdir(), 'hogbase-dying-'));
    const out = join(outDir, 'rows.tsv');
    const ends: Array<string | number> = [];
    const raw = new RedisClient(redis.url);
    try {
      // Bounded: without the count of deaths, every writer dies on it for ever.
      for (let run = 0; run < 8 && ends.at(-1) !== 0; run++) {
        const child = Bun.spawn([process.execPath, join(import.meta.dir, '..', 'helpers', 'dying-writer.ts')], {
          env: { ...process.env, REDIS_URL: redis.url, PREFIX: `w${prefix}`, OUT: out, POISON: 'POISON-PILL' },
          stdout: 'ignore',
          stderr: 'pipe',
        });
        const code = await child.exited;
        ends.push(child.signalCode ?? code);
        // The dead writer's lease runs out (deleted here, as its time to live would).
        await raw.send('DEL', [`w${prefix}:lease:0`]);
      }
    } finally {
      raw.close();
    }
    const written = existsSync(out) ? readFileSync(out, 'utf8').trim().split('\n').map((line) => line.split('\t').slice(0, 3).join(' ')) : [];
    rmSync(outDir, { recursive: true, force: true });
    // Its first death is not counted (an entry read the first time is not marked); three more are.
    expect(ends).toEqual(['SIGKILL', 'SIGKILL', 'SIGKILL', 'SIGKILL', 0]);
    const letters = await log.listDeadLetters();
    expect(letters.map((l) => [JSON.parse(l.body)[0].event, l.reason])).toEqual([['poison', `${DIED} (3 failures, the last a death of the writer process)`]]);
    expect(written).toEqual([1, 2, 3].map((n) => `${uuid(n)} ${teamId} good-${n}`));
    expect(await log.read('reader', 0, 10)).toEqual([]);
    log.close();
  }, 60_000);

  test('a mark left by a live writer (its pass failed: PostgreSQL or ClickHouse away) counts for nothing, and one left by a writer that died counts once', async () => {
    log = await openRedisLog({ url: redis.url, prefix: `w${++prefix}`, partitions: 1 });
    const id = await append(15, [{ event: 'marked', distinct_id: 'user-7' }]);
    await log.processing('writer-g', 0, id);
    expect(await log.crashed('writer-g', 0)).toBeNull();
    await log.processing('writer-g', 0, id);
    expect(await log.crashed('writer-h', 0)).toEqual({ id, failures: 1 });
    // The mark went with that count.
    expect(await log.crashed('writer-h', 0)).toBeNull();
    // A redelivered entry whose processing meets PostgreSQL away: the writer clears its mark before the pass fails.
    const away = () => Promise.reject(new AppError('unavailable', 'The management database is not available.'));
    const w = writer('writer-i', { process: away });
    await expect(w.pass()).rejects.toThrow('management database');
    await expect(w.pass()).rejects.toThrow('management database');
    expect(await log.crashed('writer-j', 0)).toBeNull();
    // Processed, then its batch's INSERT fails (ClickHouse away): no entry's doing, no mark left either.
    const chAway = new Proxy(ch, { get: (target, key) => (key === 'insertTabSeparated' ? () => Promise.reject(new Error('ClickHouse: connection refused')) : Reflect.get(target, key)) });
    await expect(writer('writer-i', { ch: chAway }).pass()).rejects.toThrow('ClickHouse: connection refused');
    expect(await log.crashed('writer-j', 0)).toBeNull();
    await w.release();
    log.close();
  });

  test('rows are held and inserted at most once an interval, every partition in one INSERT, unacknowledged until then; a clean stop inserts what is held', async () => {
    log = await openRedisLog({ url: redis.url, prefix: `w${++prefix}`, partitions: 2 });
    let clock = 0;
    const inserts: number[] = [];
    const counting = new Proxy(ch, {
      get: (target, key) =>
        key === 'insertTabSeparated'
          ? async (table: string, columns: string[], rows: Iterable<string> | AsyncIterable<string>) => {
              let text = '';
              for await (const chunk of rows) text += chunk;
              inserts.push(text.split('\n').filter(Boolean).length);
              return target.insertTabSeparated(table, columns, [text]);
            }
          : Reflect.get(target, key),
    });
    const pending = async () => {
      const raw = new RedisClient(redis.url);
      let n = 0;
      for (const p of [0, 1]) n += Number((await raw.send('XPENDING', [`w${prefix}:log:${p}`, 'writers']))[0]);
      raw.close();
      return n;
    };
    const appendTo = (p: number, n: number, body: unknown) => log.append(p, { context: context(n), body: JSON.stringify(body), events: 1 });
    const held = (events: Array<{ event: string }>) => events.map((r) => r.event).filter((e) => e.startsWith('held-')).sort();
    const before = await countEvents(ch, teamId);
    const w = writer('writer-k', { ch: counting, insertEveryMs: 1_000, now: () => clock });
    await appendTo(0, 7, [{ event: 'held-1', distinct_id: 'user-5' }, { event: 'held-2', distinct_id: 'user-5' }]);
    await appendTo(1, 8, [{ event: 'held-3', distinct_id: 'user-6' }]);
    expect(await w.pass()).toEqual({ taken: 2, entries: 0, rows: 0, deadLettered: 0, partitions: [0, 1] });
    clock += 500;
    await appendTo(0, 9, [{ event: 'held-4', distinct_id: 'user-5' }]);
    // Only the new entry is processed: those held are not read again.
    expect(await w.pass()).toEqual({ taken: 1, entries: 0, rows: 0, deadLettered: 0, partitions: [0, 1] });
    expect([inserts, await countEvents(ch, teamId), await pending()]).toEqual([[], before, 3]);
    clock += 500;
    expect(await w.pass()).toEqual({ taken: 0, entries: 3, rows: 4, deadLettered: 0, partitions: [0, 1] });
    expect([inserts, await countEvents(ch, teamId), await pending()]).toEqual([[4], before + 4, 0]);
    expect(held(await newestEvents(ch, teamId, { limit: 100 }))).toEqual(['held-1', 'held-2', 'held-3', 'held-4']);

    await appendTo(1, 10, [{ event: 'held-5', distinct_id: 'user-6' }]);
    expect(await w.pass()).toEqual({ taken: 1, entries: 0, rows: 0, deadLettered: 0, partitions: [0, 1] });
    await w.release();
    expect([inserts, await countEvents(ch, teamId), await pending()]).toEqual([[4, 1], before + 5, 0]);

    // Past the memory bound, no waiting for the interval.
    const small = writer('writer-l', { ch: counting, insertEveryMs: 1_000, maxHeldBytes: 1, now: () => clock });
    await appendTo(0, 11, [{ event: 'at-once', distinct_id: 'user-7' }]);
    expect(await small.pass()).toEqual({ taken: 1, entries: 1, rows: 1, deadLettered: 0, partitions: [0, 1] });
    expect(inserts).toEqual([4, 1, 1]);
    await small.release();
    log.close();
  });
});

describe('uuidv7FromSeed', () => {
  test('a version-7 id of the time, the same for the same seed, another for another', () => {
    const a = uuidv7FromSeed(T0, '0/1795730864840-0/0');
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a.replace(/-/g, '').slice(0, 12)).toBe(T0.toString(16).padStart(12, '0'));
    expect(uuidv7FromSeed(T0, '0/1795730864840-0/0')).toBe(a);
    expect(uuidv7FromSeed(T0, '0/1795730864840-0/1')).not.toBe(a);
  });
});
