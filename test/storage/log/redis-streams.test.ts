import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { RedisClient } from 'bun';
import { AppError } from '../../../src/errors';
import { LogNotDurableError, openRedisLog, partitionOf, type LogRecord, type RedisLog } from '../../../src/storage/log/redis-streams';
import { killRedis, REDIS_SKIP_REASON, redisAvailable, startRedis, type TestRedis } from '../../helpers/redis';

const record = (n: number, body = `[{"event":"e${n}","distinct_id":"ü-${n}"}]`): LogRecord => ({ context: JSON.stringify({ teamId: 1, receivedAt: 1_700_000_000_000 + n }), body, events: 1 });
const strip = (entries: Array<{ context: string; body: string; events: number }>) => entries.map(({ context, body, events }) => ({ context, body, events }));

describe('partitionOf', () => {
  test('one person, one partition; people spread over all of them', () => {
    expect(partitionOf(7, 'user-1', 16)).toBe(partitionOf(7, 'user-1', 16));
    const seen = new Set<number>();
    for (let i = 0; i < 2000; i++) {
      const p = partitionOf(7, `user-${i}`, 16);
      expect(p >= 0 && p < 16 && Number.isInteger(p)).toBe(true);
      seen.add(p);
    }
    expect(seen.size).toBe(16);
    expect(partitionOf(7, 'user-1', 1)).toBe(0);
  });
});

const run = redisAvailable ? describe : describe.skip;

run(`the Redis Streams log${redisAvailable ? '' : ` (skipped: ${REDIS_SKIP_REASON})`}`, () => {
  let redis: TestRedis;
  let prefixes = 0;
  const open = (partitions = 2) => openRedisLog({ url: redis.url, prefix: `t${++prefixes}`, partitions });

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await killRedis(redis).catch(() => undefined);
  });

  test('entries come back in order, whole, once acknowledged they are gone; trimming keeps what is not done', async () => {
    const log = await open();
    const ids = [];
    for (let n = 0; n < 5; n++) ids.push(await log.append(1, record(n, n === 3 ? 'tab\there\nnewline "quoted" 😀 \u0000' : undefined)));
    const first = await log.read('w1', 1, 3);
    expect(first.map((e) => [e.partition, e.id, e.deliveries])).toEqual(ids.slice(0, 3).map((id) => [1, id, 1]));
    expect(strip(first)).toEqual([record(0), record(1), record(2)]);
    await log.ack(1, first.map((e) => e.id));
    const rest = await log.read('w1', 1, 10);
    expect(strip(rest)).toEqual([record(3, 'tab\there\nnewline "quoted" 😀 \u0000'), record(4)]);
    expect(await log.read('w1', 0, 10)).toEqual([]);
    await log.trim(1);
    const raw = new RedisClient(redis.url);
    // The two read but not acknowledged stay; the three done are gone.
    expect(Number(await raw.send('XLEN', [`t${prefixes}:log:1`]))).toBe(2);
    await log.ack(1, rest.map((e) => e.id));
    await log.trim(1);
    expect(Number(await raw.send('XLEN', [`t${prefixes}:log:1`]))).toBeLessThanOrEqual(1);
    expect(await log.read('w1', 1, 10)).toEqual([]);
    raw.close();
    log.close();
  });

  test('one writer per partition; a crashed writer\'s unacknowledged entries go to the next holder first, in order', async () => {
    const a = await open();
    const b = await open();
    // b shares a's prefix: the same log seen from another writer process.
    const bLog = await openRedisLog({ url: redis.url, prefix: `t${prefixes - 1}`, partitions: 2 });
    b.close();
    expect(await a.lease('writer-a', 60_000)).toEqual([0, 1]);
    expect(await bLog.lease('writer-b', 60_000)).toEqual([]);
    expect(await a.lease('writer-a', 60_000)).toEqual([0, 1]);
    for (let n = 0; n < 4; n++) await a.append(0, record(n));
    const taken = await a.read('writer-a', 0, 3);
    expect(taken).toHaveLength(3);
    // writer-a dies without acknowledging: its lease runs out (deleted here, as its time to live would).
    const raw = new RedisClient(redis.url);
    await raw.send('DEL', [`t${prefixes - 1}:lease:0`]);
    raw.close();
    expect(await bLog.lease('writer-b', 60_000)).toEqual([0]);
    expect(await bLog.takeOver('writer-b', 0)).toBe(3);
    const resumed = await bLog.read('writer-b', 0, 10);
    expect(strip(resumed)).toEqual([record(0), record(1), record(2)]);
    expect(resumed.map((e) => e.deliveries)).toEqual([2, 2, 2]);
    await bLog.ack(0, resumed.map((e) => e.id));
    expect(strip(await bLog.read('writer-b', 0, 10))).toEqual([record(3)]);
    // A released lease is free at once; someone else's lease is not released by another.
    await a.release('writer-b', 1);
    expect(await bLog.lease('writer-b', 60_000)).toEqual([0]);
    await a.release('writer-a', 1);
    expect(await bLog.lease('writer-b', 60_000)).toEqual([0, 1]);
    a.close();
    bLog.close();
  });

  test('dead letters leave the partition, are listed whole, and replay into it', async () => {
    const log = await open();
    const id = await log.append(1, record(1));
    await log.append(1, record(2));
    const [bad] = await log.read('w', 1, 1);
    await log.deadLetter(bad!, 'not JSON at byte 3');
    const after = await log.read('w', 1, 10);
    expect(after.map((e) => e.body)).toEqual([record(2).body]);
    await log.ack(1, after.map((e) => e.id));
    const letters = await log.listDeadLetters();
    expect(letters.map(({ deadId: _, ...l }) => l)).toEqual([{ partition: 1, id, reason: 'not JSON at byte 3', deliveries: 1, ...record(1) }]);
    expect(await log.replayDeadLetters(['0-1'])).toBe(0);
    expect(await log.replayDeadLetters()).toBe(1);
    expect(await log.listDeadLetters()).toEqual([]);
    const replayed = await log.read('w', 1, 10);
    expect(replayed.map((e) => e.id > id)).toEqual([true]);
    expect(strip(replayed)).toEqual([record(1)]);
    log.close();
  });

  test("an entry's failures are counted until it is acknowledged or dead-lettered", async () => {
    const log = await open();
    const [a, b] = [await log.append(0, record(1)), await log.append(0, record(2))];
    const entries = await log.read('w', 0, 10);
    expect([await log.failed(0, a), await log.failed(0, a), await log.failed(0, b)]).toEqual([1, 2, 1]);
    await log.ack(0, [a]);
    await log.deadLetter(entries[1]!, 'bad');
    const raw = new RedisClient(redis.url);
    expect(Number(await raw.send('EXISTS', [`t${prefixes}:failures:0`]))).toBe(0);
    raw.close();
    // Counted afresh should the id be seen again (a replayed dead letter gets a new id anyway).
    expect(await log.failed(0, a)).toBe(1);
    log.close();
  });

  test('consumers that are idle, own no pending entry and do not hold the lease are deleted, a bounded number at a time', async () => {
    const log = await open();
    const consumers = async (p: number) => {
      const raw = new RedisClient(redis.url);
      const reply = (await raw.send('XINFO', ['CONSUMERS', `t${prefixes}:log:${p}`, 'writers'])) as Array<Record<string, unknown>>;
      raw.close();
      return reply.map((c) => `${c.name}:${c.pending}`).sort();
    };
    for (let n = 0; n < 5; n++) await log.append(0, record(n));
    await log.append(1, record(9));
    // Writers gone, each after acknowledging what it read.
    for (const gone of ['gone-1', 'gone-2', 'gone-3']) await log.ack(0, (await log.read(gone, 0, 1)).map((e) => e.id));
    // One gone with an entry unacknowledged (the next holder claims it), one that holds the lease.
    await log.read('crashed', 0, 1);
    expect(await log.lease('holder', 60_000)).toEqual([0, 1]);
    await log.ack(0, (await log.read('holder', 0, 1)).map((e) => e.id));
    await log.ack(1, (await log.read('gone-1', 1, 1)).map((e) => e.id));
    expect(await consumers(0)).toEqual(['crashed:1', 'gone-1:0', 'gone-2:0', 'gone-3:0', 'holder:0']);
    // Not idle long enough: all were just active.
    expect(await log.pruneConsumers(0, 60_000)).toBe(0);
    expect(await log.pruneConsumers(0, 0, 2)).toBe(2);
    expect(await log.pruneConsumers(0, 0)).toBe(1);
    expect(await consumers(0)).toEqual(['crashed:1', 'holder:0']);
    expect(await log.pruneConsumers(0, 0)).toBe(0);
    // Another partition's consumers are its own.
    expect(await consumers(1)).toEqual(['gone-1:0']);
    // The crashed one's entry is still there for the next holder.
    expect(await log.takeOver('holder', 0)).toBe(1);
    log.close();
  });

  test('an entry Redis answered for survives Redis being killed', async () => {
    const own = await startRedis();
    const log = await openRedisLog({ url: own.url, partitions: 1 });
    const ids = [];
    for (let n = 0; n < 20; n++) ids.push(await log.append(0, record(n)));
    log.close();
    await killRedis(own, true);
    const again = await startRedis(own.dir, own.port);
    const reopened = await openRedisLog({ url: again.url, partitions: 1 });
    const entries = await reopened.read('w', 0, 100);
    expect(entries.map((e) => e.id)).toEqual(ids);
    expect(strip(entries)).toEqual(Array.from({ length: 20 }, (_, n) => record(n)));
    reopened.close();
    await killRedis(again);
  });

  test('Redis restarted: appends fail with 503 while it is away, then go through again on the same log', async () => {
    const own = await startRedis();
    const log = await openRedisLog({ url: own.url, partitions: 1 });
    const before = await log.append(0, record(0));
    await killRedis(own, true);
    // Bun's own client gives up after its retries; the log must not stay down with it.
    for (let n = 0; n < 5; n++) {
      const error = await log.append(0, record(1)).catch((e) => e);
      expect({ kind: error.kind, retryAfter: error.retryAfter }).toEqual({ kind: 'unavailable', retryAfter: 1 });
    }
    const again = await startRedis(own.dir, own.port);
    const after = await log.append(0, record(2));
    expect((await log.read('w', 0, 10)).map((e) => e.id)).toEqual([before, after]);
    log.close();
    await killRedis(again);
  });

  test('a Redis that does not fsync every write before answering is refused', async () => {
    const lax = await startRedis(undefined, undefined, false);
    const error = await openRedisLog({ url: lax.url, partitions: 1 }).catch((e) => e);
    expect(error).toEqual(new LogNotDurableError('The Redis log must fsync every write before answering (appendonly yes, appendfsync always); it has appendonly no, appendfsync everysec.'));
    await killRedis(lax);
  });

  test('a log that does not answer refuses with 503 and Retry-After', async () => {
    const error = await openRedisLog({ url: 'redis://127.0.0.1:1', partitions: 1 }).catch((e) => e);
    expect(error).toBeInstanceOf(AppError);
    expect({ kind: error.kind, detail: error.detail, retryAfter: error.retryAfter }).toEqual({ kind: 'unavailable', detail: 'The event log is not available; retry later.', retryAfter: 1 });
  });
});
