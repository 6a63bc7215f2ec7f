import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openRedisLog, type LogEntry, type RedisLog } from '../src/storage/log/redis-streams';
import { killRedis, REDIS_SKIP_REASON, redisAvailable, startRedis, type TestRedis } from './helpers/redis';
import { runCliProcess } from './helpers/server-process';

/**
 * `npm run cli -- dlq …` in cluster mode: with EVENT_LOG in the environment (a node's or a
 * writer's configuration) it lists and replays the log's dead letters in Redis, and opens no data
 * directory. The cluster test (test/cluster/faults.test.ts) shows a writer then processing them.
 */
const run = redisAvailable ? describe : describe.skip;

run(`operator CLI: the cluster log's dead letters${redisAvailable ? '' : ` (skipped: ${REDIS_SKIP_REASON})`}`, () => {
  let redis: TestRedis;
  let log: RedisLog;
  const dataDir = mkdtempSync(join(tmpdir(), 'dlq-log-'));
  const letter = (partition: number, id: string, body: string): LogEntry => ({ partition, id, context: JSON.stringify({ teamId: 1, receivedAt: 1_700_000_000_000 }), body, events: 1, deliveries: 3 });
  // A node's configuration: META_STORE must be named, but dlq never opens it.
  const cli = (...args: string[]) => runCliProcess(['dlq', ...args], dataDir, undefined, { ROLE: 'node', EVENT_LOG: redis.url, META_STORE: 'postgres://postgres@127.0.0.1:1/unused' });

  beforeAll(async () => {
    redis = await startRedis();
    log = await openRedisLog({ url: redis.url, partitions: 16 });
  });
  afterAll(async () => {
    log?.close();
    await killRedis(redis).catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('list shows each dead letter with its reason; replay logs the chosen ones again in their partitions', async () => {
    expect((await cli('list')).stdout).toBe('(no dead letters)\n');
    await log.deadLetter(letter(3, '1700000000000-0', '[{"event":"a","distinct_id":"u"}]'), 'ClickHouse: Timeout exceeded');
    await log.deadLetter(letter(5, '1700000000001-0', '[{"event": "broken", '), 'JSON Parse error: Unexpected EOF');
    const listed = await cli('list', '--json');
    expect(listed.code).toBe(0);
    const letters = JSON.parse(listed.stdout) as Array<Record<string, unknown>>;
    expect(letters.map(({ id: _, context: __, ...rest }) => rest)).toEqual([
      { partition: 3, entry_id: '1700000000000-0', events: 1, deliveries: 3, reason: 'ClickHouse: Timeout exceeded', body: '[{"event":"a","distinct_id":"u"}]' },
      { partition: 5, entry_id: '1700000000001-0', events: 1, deliveries: 3, reason: 'JSON Parse error: Unexpected EOF', body: '[{"event": "broken", ' },
    ]);
    const text = await cli('list');
    expect(text.stdout.trim().split('\n')).toEqual([
      `${letters[0]!.id}  partition 3  entry 1700000000000-0  1 events  3 deliveries  ClickHouse: Timeout exceeded`,
      `${letters[1]!.id}  partition 5  entry 1700000000001-0  1 events  3 deliveries  JSON Parse error: Unexpected EOF`,
    ]);

    const unknown = await cli('replay', '--id', '1-1');
    expect([unknown.code, unknown.stderr.trim()]).toEqual([2, 'no dead letter with id 1-1 (dlq list shows them)']);
    const replayed = await cli('replay', '--id', String(letters[0]!.id));
    expect([replayed.code, replayed.stdout]).toEqual([0, 'replayed 1 dead letter(s) into the log; a writer processes them next\n']);
    // Back in its partition, whole, as a new entry for the writers.
    const again = await log.read('w', 3, 10);
    expect(again.map(({ context, body, events }) => ({ context, body, events }))).toEqual([{ context: JSON.stringify({ teamId: 1, receivedAt: 1_700_000_000_000 }), body: '[{"event":"a","distinct_id":"u"}]', events: 1 }]);
    expect((JSON.parse((await cli('list', '--json')).stdout) as Array<{ id: string }>).map((d) => d.id)).toEqual([String(letters[1]!.id)]);
    expect(JSON.parse((await cli('replay', '--json')).stdout)).toEqual({ replayed: 1 });
    expect((await cli('list')).stdout).toBe('(no dead letters)\n');
    expect(readdirSync(dataDir)).toEqual([]);
  }, 30_000);

  test('the log unreachable: a message and status 1, no data directory touched', async () => {
    const down = await runCliProcess(['dlq', 'list'], dataDir, undefined, { ROLE: 'node', EVENT_LOG: 'redis://127.0.0.1:1', META_STORE: 'postgres://postgres@127.0.0.1:1/unused' });
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('The event log redis://127.0.0.1:1 (EVENT_LOG) cannot be reached');
    expect(readdirSync(dataDir)).toEqual([]);
  }, 30_000);
});
