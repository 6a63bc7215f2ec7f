import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createLogIntake } from '../../../src/storage/log/log-intake';
import { LogNotDurableError, openRedisLog, partitionOf } from '../../../src/storage/log/redis-streams';
import type { IntakeContext } from '../../../src/storage/events/wal-format';
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

  test('one entry per request, in its first distinct id\'s partition, with its context and body as the writers read them', async () => {
    const log = await openRedisLog({ url: redis.url, prefix: 'intake', partitions: 4 });
    const intake = createLogIntake(log);
    const context: IntakeContext = { teamId: 7, receivedAt: 1_790_000_000_000, ip: '10.1.2.3', anonymizeIps: false, sentAt: null, engage: false };
    const body = '[{"event":"a","distinct_id":"ü-1"},{"event":"b","distinct_id":"other"}]';
    await intake.append({ context, body: new TextEncoder().encode(body), events: 2, parsed: null, distinctIds: ['ü-1', 'other'] });
    const partition = partitionOf(7, 'ü-1', 4);
    const entries = await log.read('w', partition, 10);
    expect(entries.map(({ context, body, events }) => ({ context: JSON.parse(context), body, events }))).toEqual([{ context, body, events: 2 }]);
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
