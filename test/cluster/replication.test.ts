import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clickhouseAnswers, missingEngines, startZooKeeper, writeClickHouseHome, zookeeperAvailable, type ClickHousePorts, type ClickHouseReplication } from '../../src/cli/cluster/engines';
import { freePort, isAlive, isRunning, startDetached, stopAll, waitUntil, type Started } from '../../src/cli/cluster/processes';
import { EVENTS_CLUSTER } from '../../src/storage/clickhouse/schema';
import { eventually } from '../helpers/cluster';

/**
 * ClickHouse replication as the README's cluster section describes it, tried on Debian's 18.16
 * (no Keeper before 21.8: Debian's ZooKeeper): one shard of two replicas of a
 * ReplicatedReplacingMergeTree table with {shard}/{replica} macros, a Distributed table over the
 * shard with internal_replication. An insert through either replica is on both; the same block
 * inserted again (a retried INSERT) is dropped by the replicas' block deduplication; with one
 * replica killed, inserts go on through the other, and the killed one catches up once started again.
 */
const missing = [...missingEngines(), ...(zookeeperAvailable() ? [] : ['ZooKeeper (apt-get install zookeeper)'])];
const run = missing.length ? describe.skip : describe;
const SKIP = missing.length ? ` (skipped: missing ${missing.join('; ')})` : '';
const CLICKHOUSE_BIN = '/usr/sbin/clickhouse-server';

run(`ClickHouse 18.16 replication through ZooKeeper: two replicas of one shard${SKIP}`, () => {
  let dir: string;
  const started: Started[] = [];
  const replicas: Array<{ ports: ClickHousePorts; url: string; argv: string[]; home: string }> = [];

  /** Start (or start again) replica `i` from its files; resolves once it answers. */
  async function startReplica(i: number) {
    const r = replicas[i]!;
    const s = startDetached(r.argv, { log: join(r.home, 'out.log'), cwd: r.home });
    started.push(s);
    await waitUntil(`replica ${i}`, () => clickhouseAnswers(r.ports.http), () => isAlive(s.pid), 30_000, join(r.home, 'error.log'));
    // It answers before its ZooKeeper session is up; replicated tables need that session.
    const session = await eventually(() => send(i, `SELECT count() FROM system.zookeeper WHERE path = '/'`, {}).then(() => true, () => false), (up) => up, 30_000);
    if (!session) throw new Error(`replica ${i} has no ZooKeeper session after 30 s`);
    return s;
  }
  /** One statement on replica `i` over HTTP (settings in the URL, as 18.16 takes them); its rows as text. */
  async function send(i: number, statement: string, settings: Record<string, string> = { database: 'hogbase' }): Promise<string> {
    const answer = await fetch(`${replicas[i]!.url}/?${new URLSearchParams(settings)}`, { method: 'POST', body: statement });
    const text = await answer.text();
    if (!answer.ok) throw new Error(text);
    return text.trim();
  }
  const count = async (i: number, final = '') => Number(await send(i, `SELECT count() FROM events_shard ${final}`).catch(() => -1));
  const rows = (from: number, n: number) => Array.from({ length: n }, (_, k) => `00000000-0000-4000-8000-${String(from + k).padStart(12, '0')}\tuser-${(from + k) % 7}\t${from + k}`).join('\n');
  // Synchronous through the Distributed table: the answer comes once the shard has the rows.
  const insert = (i: number, table: string, body: string) => send(i, `INSERT INTO ${table} FORMAT TabSeparated\n${body}`, { database: 'hogbase', insert_distributed_sync: '1' });

  /** ZooKeeper, two replicas and their tables, from nothing. */
  async function setUp() {
    dir = mkdtempSync(join(tmpdir(), 'hogbase-replication-'));
    const zookeeperPort = await freePort();
    started.push((await startZooKeeper(dir, zookeeperPort, join(dir, 'zookeeper.log'))).started);
    const ports: ClickHousePorts[] = [];
    for (let i = 0; i < 2; i++) ports.push({ http: await freePort(), tcp: await freePort() });
    for (let i = 0; i < 2; i++) {
      const home = join(dir, `clickhouse-${i}`);
      const replication: ClickHouseReplication = { zookeeperPort, interserverPort: await freePort(), shard: '01', replica: `replica-${i}` };
      // One shard whose two servers are replicas of each other.
      writeClickHouseHome(home, ports[i]!, [ports], replication);
      replicas.push({ ports: ports[i]!, url: `http://127.0.0.1:${ports[i]!.http}`, argv: [CLICKHOUSE_BIN, `--config-file=${join(home, 'config.xml')}`], home });
      await startReplica(i);
    }
    // A replica answers queries before its ZooKeeper session is up: a replicated CREATE can meet
    // "Connection loss" in its first seconds, and is tried again.
    const untilZooKeeper = async (i: number, statement: string) => {
      for (let attempt = 0; ; attempt++) {
        try {
          return await send(i, statement);
        } catch (error) {
          if (attempt >= 60 || !/Connection loss|Coordination|ZooKeeper/i.test(String(error))) throw error;
          await Bun.sleep(500);
        }
      }
    };
    for (let i = 0; i < 2; i++) {
      await send(i, 'CREATE DATABASE IF NOT EXISTS hogbase', {});
      await untilZooKeeper(i, `CREATE TABLE IF NOT EXISTS hogbase.events_shard (uuid UUID, distinct_id String, n UInt32) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/hogbase/events_shard', '{replica}') ORDER BY uuid`);
      await send(i, `CREATE TABLE hogbase.events AS hogbase.events_shard ENGINE = Distributed(${EVENTS_CLUSTER}, hogbase, events_shard, cityHash64(distinct_id))`);
    }
  }

  // Three processes and their ports, a JVM among them: a start that fails (a port taken meanwhile,
  // a session slow to come) is stopped and tried again from nothing, so a CI run does not fail
  // on the machine's timing; a third failure is the test's.
  beforeAll(async () => {
    const failures: string[] = [];
    for (let attempt = 1; ; attempt++) {
      try {
        await setUp();
        return;
      } catch (error) {
        failures.push(`attempt ${attempt}: ${error instanceof Error ? error.message : String(error)}`);
        await stopAll(started.splice(0), 'SIGKILL', 10_000);
        replicas.splice(0);
        if (dir) rmSync(dir, { recursive: true, force: true });
        if (attempt === 3) throw new Error(`replication set-up failed 3 times:\n${failures.join('\n')}`);
        console.warn(`[replication] set-up failed, trying again: ${failures.at(-1)}`);
      }
    }
  }, 240_000);

  afterAll(async () => {
    // Killed outright, every process this file started (replicas started again included), by PID.
    await stopAll(started, 'SIGKILL', 10_000);
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  test('an insert through the Distributed table on one replica is on both', async () => {
    await insert(0, 'events', rows(0, 100));
    expect(await eventually(() => count(1), (n) => n === 100, 30_000)).toBe(100);
    expect(await count(0)).toBe(100);
  }, 60_000);

  test('the same block inserted again, at either replica, is dropped (block deduplication): no FINAL needed for a retried INSERT', async () => {
    await insert(1, 'events_shard', rows(0, 100));
    await insert(0, 'events_shard', rows(0, 100));
    // A block that differs (one row more) is not a retry: its rows are stored, and only FINAL or merges collapse them.
    await insert(0, 'events_shard', rows(0, 101));
    expect(await eventually(() => count(1), (n) => n === 201, 30_000)).toBe(201);
    expect(await count(1, 'FINAL')).toBe(101);
  }, 60_000);

  test('one replica killed: inserts go on through the other; started again, it catches up', async () => {
    const lost = started.find((s) => s.argv?.join(' ') === replicas[0]!.argv.join(' ') && isRunning(s))!;
    process.kill(lost.pid, 'SIGKILL');
    expect(await eventually(async () => isRunning(lost), (alive) => !alive, 10_000)).toBe(false);
    await insert(1, 'events_shard', rows(1000, 50));
    expect(await count(1)).toBe(251);
    await startReplica(0);
    // It replicates again once its old ZooKeeper session has expired, then fetches what it missed.
    expect(await eventually(() => count(0), (n) => n === 251, 60_000)).toBe(251);
  }, 90_000);
});
