import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createLogIntake } from '../../../src/storage/log/log-intake';
import { AppError } from '../../../src/errors';
import { LogNotDurableError, openRedisLog, partitionOf, type RedisLog } from '../../../src/storage/log/redis-streams';
import type { IntakeContext } from '../../../src/storage/events';
import { openStorage } from '../../../src/storage';
import { killRedis, REDIS_SKIP_REASON, redisAvailable, startRedis, type TestRedis } from '../../helpers/redis';

const run = redisAvailable ? describe : describe.skip;

run(`a capture node's intake: the cluster's log${redisAvailable ? '' : ` (skipped: ${REDIS_SKIP_REASON})`}`, () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await killRedis(redis).catch(() => undefined);
  });

  const context: IntakeContext = { teamId: 7, receivedAt: 1_790_000_000_000, ip: '10.1.2.3', anonymizeIps: false, sentAt: 1_789_999_999_000, engage: false };
  /** Every entry of every partition, as the writers read them. */
  const entriesOf = async (log: RedisLog) => {
    const all: Array<{ partition: number; context: unknown; body: string; events: number }> = [];
    for (let p = 0; p < log.partitions; p++) for (const e of await log.read('reader', p, 100)) all.push({ partition: p, context: JSON.parse(e.context), body: e.body, events: e.events });
    return all;
  };
  /** A distinct id of project 7 in another partition than `other`'s. */
  const idApartFrom = (other: string) => Array.from({ length: 50 }, (_, i) => `person-${i}`).find((id) => partitionOf(7, id, 4) !== partitionOf(7, other, 4))!;

  test('a request naming one partition\'s people is one entry there, with its context and its body as received', async () => {
    const log = await openRedisLog({ url: redis.url, prefix: 'intake-one', partitions: 4 });
    const intake = createLogIntake(log);
    const body = '[{"event":"a","distinct_id":"ü-1"},{"event":"b","distinct_id":"ü-1"}]';
    await intake.append({ context, body: new TextEncoder().encode(body), events: 2, parsed: JSON.parse(body), distinctIds: ['ü-1', 'ü-1'] });
    expect(await entriesOf(log)).toEqual([{ partition: partitionOf(7, 'ü-1', 4), context, body, events: 2 }]);
    log.close();
  });

  test.each([
    ['parsed at receipt', true],
    ['parsed again from the body (another thread parsed it)', false],
  ])('a batch naming two people of different partitions: each person\'s events in their own partition, in order (%s)', async (_, keepParsed) => {
    const log = await openRedisLog({ url: redis.url, prefix: `intake-split-${keepParsed}`, partitions: 4 });
    const intake = createLogIntake(log);
    const [ann, bob] = ['ann', idApartFrom('ann')];
    const batch = [
      { event: 'a1', distinct_id: ann, properties: { n: 1 } },
      { event: 'b1', distinct_id: bob },
      { event: 'a2', properties: { distinct_id: ann, n: 2 } },
      { event: 'b2', $distinct_id: bob, uuid: '01a219da-5fd6-7749-8000-00000000abcd' },
    ];
    const body = JSON.stringify({ api_key: 'phc_x', sent_at: '2026-09-21T00:00:00Z', batch });
    await intake.append({ context, body, events: 4, parsed: keepParsed ? batch : null, distinctIds: [ann, bob, ann, bob] });
    const expected = [
      { partition: partitionOf(7, ann, 4), context, body: JSON.stringify([batch[0], batch[2]]), events: 2 },
      { partition: partitionOf(7, bob, 4), context, body: JSON.stringify([batch[1], batch[3]]), events: 2 },
    ].sort((x, y) => x.partition - y.partition);
    expect(await entriesOf(log)).toEqual(expected);
    log.close();
  });

  test('the parts of a split request are logged all together or not at all: a failure leaves nothing, the retry is the only copy', async () => {
    const log = await openRedisLog({ url: redis.url, prefix: 'intake-fail', partitions: 4 });
    const [ann, bob] = ['ann', idApartFrom('ann')];
    const calls: string[] = [];
    const spying: RedisLog = {
      ...log,
      append: (p, record) => (calls.push(`append ${p}`), log.append(p, record)),
      appendAll: (ctx, parts) => (calls.push(`appendAll ${parts.map((x) => x.partition).join(',')}`), log.appendAll(ctx, parts)),
    };
    const failing: RedisLog = { ...spying, appendAll: (ctx, parts) => (calls.push('appendAll (refused)'), Promise.reject(new AppError('unavailable', 'The event log is not available; retry later.'))) };
    const batch = [{ event: 'a', distinct_id: ann }, { event: 'b', distinct_id: bob }];
    const request = { context, body: JSON.stringify(batch), events: 2, parsed: batch, distinctIds: [ann, bob] };
    await expect(createLogIntake(failing).append(request)).rejects.toMatchObject({ kind: 'unavailable' });
    expect(await entriesOf(log)).toEqual([]);
    // The client's retry: both parts, in one script.
    await createLogIntake(spying).append(request);
    const parts = [
      { partition: partitionOf(7, ann, 4), context, body: JSON.stringify([batch[0]]), events: 1 },
      { partition: partitionOf(7, bob, 4), context, body: JSON.stringify([batch[1]]), events: 1 },
    ];
    expect(calls).toEqual(['appendAll (refused)', `appendAll ${parts.map((x) => x.partition).join(',')}`]);
    expect(await entriesOf(log)).toEqual(parts.sort((x, y) => x.partition - y.partition));
    log.close();
  });

  test('a node refuses a Redis that does not fsync every write, before it makes anything', async () => {
    const lax = await startRedis(undefined, undefined, false);
    try {
      const dataDir = `${redis.dir}/never-made`;
      await expect(openStorage({ dataDir, eventLog: lax.url })).rejects.toBeInstanceOf(LogNotDurableError);
      expect(await Bun.file(`${dataDir}/analytics.duckdb`).exists()).toBe(false);
    } finally {
      await killRedis(lax);
    }
  });
});
