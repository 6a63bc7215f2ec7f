import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { missingEngines } from '../../src/cli/cluster/engines';
import { isRunning, readState, type ClusterState } from '../../src/cli/cluster/processes';
import { openRedisLog, type RedisLog } from '../../src/storage/log/redis-streams';
import { chQuery, cluster, eventually, listedIds, shardUrls, startLoad, summaryOf, type Load, type UpSummary } from '../helpers/cluster';
import { runCliProcess } from '../helpers/server-process';

/**
 * Faults of a running cluster (`npm run cluster -- up`, once for the file), each during a load of
 * SDK-shaped requests retried until acknowledged: Redis stopped and started again, one ClickHouse
 * shard killed and started again, PostgreSQL stopped and started again, a capture node killed
 * outright. After each, with nothing done
 * but starting the engine again, every acknowledged event is in ClickHouse once (distinct uuids =
 * rows read FINAL = acknowledged, the same uuids) and a node's events API lists each once.
 * Also the log's dead letters through `npm run cli -- dlq` with the cluster's EVENT_LOG.
 */
const missing = missingEngines();
const run = missing.length ? describe.skip : describe;
const SKIP = missing.length ? ` (skipped: missing ${missing.join('; ')})` : '';
const BATCHES = 40;
const PER_BATCH = 50;

run(`cluster faults: Redis, a ClickHouse shard, PostgreSQL and a node restarted or killed during a load${SKIP}`, () => {
  let dir: string;
  let up: UpSummary;
  let shards: string[];
  let env: Record<string, string>;
  let down = false;

  const state = () => readState(dir) as ClusterState;
  // -1 while the events table cannot be read (a shard down).
  const rowsOf = async (event: string) => Number(await chQuery(shards[0]!, `SELECT count() FROM events FINAL WHERE team_id = ${up.project_id} AND event = '${event}'`).catch(() => -1));
  const load = (event: string, nodes = up.nodes) => startLoad({ nodes, apiKey: up.project_api_key, event, batches: BATCHES, perBatch: PER_BATCH, holdFrom: BATCHES * 0.75 });
  const writerLog = () => readFileSync(join(dir, 'logs', 'writer-0.log'), 'utf8');
  const failedPasses = () => writerLog().split('a writer pass failed').length - 1;

  /** Everything acknowledged, once: in ClickHouse (FINAL and raw distinct uuids) and through `node`'s events API. */
  async function expectExactlyOnce(l: Load, event: string, node: string) {
    const expected = [...l.acknowledged].sort();
    expect(expected).toHaveLength(BATCHES * PER_BATCH);
    // The writer goes on by itself once the engine is back: bounded wait for its backlog.
    expect(await eventually(() => rowsOf(event), (n) => n >= expected.length, 90_000)).toBe(expected.length);
    const final = (await chQuery(shards[0]!, `SELECT toString(uuid) FROM events FINAL WHERE team_id = ${up.project_id} AND event = '${event}' ORDER BY uuid`)).split('\n');
    expect(final.sort()).toEqual(expected);
    const [uuids, rows] = (await chQuery(shards[0]!, `SELECT uniqExact(uuid), count() FROM events WHERE team_id = ${up.project_id} AND event = '${event}'`)).split('\t').map(Number);
    expect(uuids).toBe(expected.length);
    const listed = await listedIds(node, up, event);
    expect(listed.length).toBe(expected.length);
    expect(listed.sort()).toEqual(expected);
    return { rowsWrittenTwice: rows! - uuids! };
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hogbase-faults-'));
    const started = await cluster('up', dir);
    if (started.code !== 0) throw new Error(`cluster up failed (${started.code}): ${started.stderr}`);
    up = summaryOf(started.stdout);
    shards = shardUrls(dir);
    env = state().env;
  }, 120_000);

  afterAll(async () => {
    // Whatever a failed test left: every process up and restart started, stopped by PID.
    if (dir && !down) await cluster('down', dir);
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  test('Redis stopped during a load: capture answers 503 with Retry-After, nothing logged; started again on its port and files, everything acknowledged arrives once', async () => {
    const event = 'fault-redis';
    const l = load(event);
    await eventually(() => rowsOf(event), (n) => n > 0, 30_000);
    const [redis] = state().pids.redis;
    process.kill(redis!.pid, 'SIGTERM');
    expect(await eventually(async () => isRunning(redis!), (alive) => !alive, 30_000)).toBe(false);
    l.release();
    // While it is down: a 503 the client may retry, not a 500; and the request is not logged.
    const probe = await fetch(`${up.nodes[1]}/batch/`, { method: 'POST', body: JSON.stringify({ api_key: up.project_api_key, batch: [{ event: 'probe-redis-down', distinct_id: 'probe' }] }) });
    expect([probe.status, probe.headers.get('retry-after'), ((await probe.json()) as { type: string }).type]).toEqual([503, '1', 'server_error']);
    // The load meets the outage too.
    expect(await eventually(async () => l.failures.get('503') ?? 0, (n) => n > 0, 30_000)).toBeGreaterThan(0);
    const restarted = await cluster('restart', dir, 'redis');
    expect([restarted.code, restarted.stderr]).toEqual([0, '']);
    expect(summaryOf(restarted.stdout).pids.redis).toEqual([state().pids.redis[0]!.pid]);
    expect(summaryOf(restarted.stdout).pids.redis[0]).not.toBe(redis!.pid);
    await l.done;
    expect([...l.failures.keys()]).toEqual(['503']);
    expect([...l.retryAfter]).toEqual(['1']);
    const { rowsWrittenTwice } = await expectExactlyOnce(l, event, up.nodes[1]!);
    expect(await rowsOf('probe-redis-down')).toBe(0);
    console.log(`[faults] Redis: ${l.failures.get('503')} answers 503 during the outage; ${rowsWrittenTwice} rows written twice, read once`);
  }, 180_000);

  test('one ClickHouse shard killed during a load: capture goes on, the writer\'s INSERT fails and is retried unacknowledged; started again, everything arrives once', async () => {
    const event = 'fault-clickhouse';
    const failedBefore = failedPasses();
    const l = load(event);
    await eventually(() => rowsOf(event), (n) => n > 0, 30_000);
    // The shard the writers do not insert into: the Distributed INSERT (synchronous) must reach it.
    const shard = state().pids.clickhouse[1]!;
    process.kill(shard.pid, 'SIGKILL');
    expect(await eventually(async () => isRunning(shard), (alive) => !alive, 30_000)).toBe(false);
    l.release();
    await l.done;
    // Nodes need no ClickHouse to acknowledge: the whole load was answered 200 at the first try.
    expect(l.failures).toEqual(new Map());
    expect(await eventually(async () => failedPasses(), (n) => n > failedBefore, 30_000)).toBeGreaterThan(failedBefore);
    const restarted = await cluster('restart', dir, 'clickhouse-1');
    expect([restarted.code, restarted.stderr]).toEqual([0, '']);
    expect(summaryOf(restarted.stdout).pids.clickhouse[1]).not.toBe(shard.pid);
    const { rowsWrittenTwice } = await expectExactlyOnce(l, event, up.nodes[0]!);
    // On both shards, together every event once.
    const perShard = await Promise.all(shards.map(async (s) => Number(await chQuery(s, `SELECT count() FROM events_shard FINAL WHERE team_id = ${up.project_id} AND event = '${event}'`))));
    expect(perShard.every((n) => n > 0) && perShard[0]! + perShard[1]! === BATCHES * PER_BATCH).toBe(true);
    console.log(`[faults] ClickHouse shard 1: ${failedPasses() - failedBefore} writer passes failed; ${rowsWrittenTwice} rows written twice, read once`);
  }, 180_000);

  test('PostgreSQL stopped during a load: capture goes on (projects cached), flags and the API answer 503 with Retry-After; started again, the writer resumes, everything arrives once and the person updates made meanwhile land', async () => {
    const event = 'fault-postgres';
    const people = ['pg-person-0', 'pg-person-1', 'pg-person-2'];
    const setPhase = (node: string, phase: string) =>
      fetch(`${node}/batch/`, { method: 'POST', body: JSON.stringify({ api_key: up.project_api_key, batch: people.map((distinct_id) => ({ event: `pg-set-${phase}`, distinct_id, properties: { $set: { phase } } })) }) });
    const phases = async (node: string) => {
      const answers = await Promise.all(people.map((id) => fetch(`${node}/api/projects/${up.project_id}/persons/?distinct_id=${id}`, { headers: { authorization: `Bearer ${up.personal_api_key}` } })));
      const bodies = await Promise.all(answers.map(async (a) => (a.status === 200 ? ((await a.json()) as { results: Array<{ properties: { phase?: string } }> }) : null)));
      return bodies.map((b) => b?.results[0]?.properties.phase ?? null);
    };
    expect((await setPhase(up.nodes[0]!, 'before')).status).toBe(200);
    expect(await eventually(() => phases(up.nodes[1]!), (p) => p.every((x) => x === 'before'), 30_000)).toEqual(['before', 'before', 'before']);
    const failedBefore = failedPasses();
    const l = load(event);
    await eventually(() => rowsOf(event), (n) => n > 0, 30_000);
    const [pg] = state().pids.postgres;
    const outage = async () => {
      expect(await eventually(async () => isRunning(pg!), (alive) => !alive, 30_000)).toBe(false);
      l.release();
      // Nodes know the project's key already: capture needs only the log.
      for (const node of up.nodes) expect((await setPhase(node, 'outage')).status).toBe(200);
      // What needs PostgreSQL now is a 503 the client may retry, not a 500: a key no node has seen,
      const cold = await fetch(`${up.nodes[0]}/batch/`, { method: 'POST', body: JSON.stringify({ api_key: 'phc_not_seen_during_the_outage', batch: [{ event: 'cold', distinct_id: 'cold' }] }) });
      expect([cold.status, cold.headers.get('retry-after')]).toEqual([503, '1']);
      // flags, and the private API.
      const decide = await fetch(`${up.nodes[0]}/decide/?v=3`, { method: 'POST', body: JSON.stringify({ token: up.project_api_key, distinct_id: 'probe' }) });
      expect([decide.status, decide.headers.get('retry-after'), ((await decide.json()) as { type: string }).type]).toEqual([503, '1', 'server_error']);
      const api = await fetch(`${up.nodes[1]}/api/projects/${up.project_id}/feature_flags/`, { headers: { authorization: `Bearer ${up.personal_api_key}` } });
      expect([api.status, api.headers.get('retry-after')]).toEqual([503, '1']);
      // The writer meets the outage (persons cannot be written): its passes fail, nothing is acknowledged.
      expect(await eventually(async () => failedPasses(), (n) => n > failedBefore, 30_000)).toBeGreaterThan(failedBefore);
      await l.done;
      expect([...l.failures.keys()].filter((k) => k !== '503')).toEqual([]);
    };
    // Fast shutdown: every connection of nodes and writers is cut.
    process.kill(pg!.pid, 'SIGINT');
    try {
      await outage();
    } finally {
      // Started again even when the outage's checks failed: the tests after this one need it.
      const restarted = await cluster('restart', dir, 'postgres');
      expect([restarted.code, restarted.stderr]).toEqual([0, '']);
      expect(summaryOf(restarted.stdout).pids.postgres[0]).not.toBe(pg!.pid);
    }
    const { rowsWrittenTwice } = await expectExactlyOnce(l, event, up.nodes[0]!);
    for (const node of up.nodes) expect(await eventually(() => phases(node), (p) => p.every((x) => x === 'outage'), 30_000)).toEqual(['outage', 'outage', 'outage']);
    expect(await rowsOf('pg-set-outage')).toBe(people.length * up.nodes.length);
    console.log(`[faults] PostgreSQL: ${failedPasses() - failedBefore} writer passes failed, ${l.failures.get('503') ?? 0} capture answers 503; ${rowsWrittenTwice} rows written twice, read once`);
  }, 180_000);

  test('dead letters of the cluster log: dlq list shows them with the reason; dlq replay logs them again and the writer processes them', async () => {
    const dataDir = join(dir, 'cli');
    const dlq = (...args: string[]) => runCliProcess(['dlq', ...args], dataDir, undefined, { ...env, ROLE: 'writer' });
    const letters = async () => JSON.parse((await dlq('list', '--json')).stdout) as Array<{ id: string; entry_id: string; reason: string; body: string; deliveries: number }>;
    const log: RedisLog = await openRedisLog({ url: env.EVENT_LOG!, partitions: 16 });
    try {
      const context = JSON.stringify({ teamId: up.project_id, receivedAt: Date.now(), ip: null, anonymizeIps: false, sentAt: null, engage: false });
      // A request no writer can process: the writer tries it 3 times, then moves it aside.
      const broken = '{"api_key": "x", "batch": [{"event": "broken",';
      await log.append(0, { context, body: broken, events: 1 });
      // A good request a writer gave up on (as after a failure that has passed since).
      const good = JSON.stringify({ api_key: up.project_api_key, batch: [{ event: 'dlq-replayed', distinct_id: 'dlq-user', uuid: '0190a2a4-0000-7000-8000-00000000d1a9' }] });
      await log.deadLetter({ partition: 5, id: '1-1', context, body: good, events: 1, deliveries: 3 }, 'ClickHouse: connection refused (test)');
      const listed = await eventually(letters, (l) => l.length === 2, 30_000);
      expect(listed.map((d) => [d.body, d.deliveries]).sort()).toEqual([[good, 3], [broken, 3]].sort());
      expect(listed.find((d) => d.body === broken)!.reason).toContain('JSON');
      expect(listed.find((d) => d.body === good)!.reason).toBe('ClickHouse: connection refused (test)');

      const replayed = await dlq('replay', '--id', listed.find((d) => d.body === good)!.id);
      expect([replayed.code, replayed.stdout.trim()]).toEqual([0, 'replayed 1 dead letter(s) into the log; a writer processes them next']);
      expect(await eventually(() => rowsOf('dlq-replayed'), (n) => n === 1, 30_000)).toBe(1);
      expect(await listedIds(up.nodes[1]!, up, 'dlq-replayed')).toEqual(['0190a2a4-0000-7000-8000-00000000d1a9']);
      expect((await letters()).map((d) => d.body)).toEqual([broken]);

      // Replayed while it still cannot be processed: it comes back to the dead letters, a new one.
      const first = (await letters())[0]!.id;
      expect((await dlq('replay')).code).toBe(0);
      const again = await eventually(letters, (l) => l.length === 1 && l[0]!.id !== first, 30_000);
      expect(again.map((d) => [d.body, d.deliveries])).toEqual([[broken, 3]]);
    } finally {
      log.close();
    }
  }, 120_000);

  test('kill -9 of a capture node during a load: what it acknowledged arrives, clients retry at the other node, each event once', async () => {
    const event = 'fault-node';
    const l = load(event);
    await eventually(() => rowsOf(event), (n) => n > 0, 30_000);
    const node = state().pids.nodes[0]!;
    process.kill(node.pid, 'SIGKILL');
    expect(await eventually(async () => isRunning(node), (alive) => !alive, 30_000)).toBe(false);
    l.release();
    await l.done;
    // Node A acknowledged part of the load before it died; after, only B answers.
    expect(l.acknowledgedBy[0]).toBeGreaterThan(0);
    expect(l.failures.get('refused') ?? 0).toBeGreaterThan(0);
    const { rowsWrittenTwice } = await expectExactlyOnce(l, event, up.nodes[1]!);
    console.log(`[faults] node A killed: it had acknowledged ${l.acknowledgedBy[0]} events, B ${l.acknowledgedBy[1]}; ${l.failures.get('refused')} attempts refused and retried at B; ${rowsWrittenTwice} rows written twice, read once`);
  }, 180_000);

  test('restart node-0 (killed above) and writer-0: back on the same port and data, new PIDs, and they serve and write', async () => {
    const before = state().pids;
    for (const name of ['node-0', 'writer-0']) {
      const restarted = await cluster('restart', dir, name);
      expect([name, restarted.code, restarted.stderr]).toEqual([name, 0, '']);
    }
    const unknown = await cluster('restart', dir, 'node-9');
    expect([unknown.code, unknown.stderr.trim()]).toEqual([64, 'cannot restart "node-9": one of postgres | redis | clickhouse-N | node-N | writer-N (N from 0) (2 ClickHouse servers, 2 nodes, 1 writers)']);
    expect([state().pids.nodes[0]!.pid, state().pids.writers[0]!.pid]).not.toEqual([before.nodes[0]!.pid, before.writers[0]!.pid]);
    expect([state().pids.nodes[0], state().pids.writers[0]].every((p) => isRunning(p!))).toBe(true);
    const sent = await fetch(`${up.nodes[0]}/batch/`, { method: 'POST', body: JSON.stringify({ api_key: up.project_api_key, batch: [{ event: 'after-restarts', distinct_id: 'r' }] }) });
    expect(sent.status).toBe(200);
    expect(await eventually(() => rowsOf('after-restarts'), (n) => n === 1, 30_000)).toBe(1);
  }, 120_000);

  test('down stops every process, the restarted engines by their new PIDs', async () => {
    const stopped = await cluster('down', dir);
    down = true;
    expect(stopped.code).toBe(0);
    expect(Object.values(state().pids).flat().filter(isRunning)).toEqual([]);
    expect(existsSync(join(dir, 'cluster.json'))).toBe(true);
  }, 120_000);
});
