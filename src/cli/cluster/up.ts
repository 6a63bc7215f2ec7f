import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { openClickHouse, parseClickHouseUrl } from '../../storage/clickhouse/client';
import { migrateClickHouse } from '../../storage/clickhouse/schema';
import { withRuntimeEnv } from '../../runtime-env';
import { startClickHouse, startPostgres, startRedis } from './engines';
import { emptyState, freePort, isAlive, isRunning, readState, startDetached, tail, waitUntil, writeState, type Account, type ClusterState, type Started } from './processes';

/** The server's entry: nodes and writers are the same program as `npm start`, in another role. */
const ENTRY = resolve(import.meta.dir, '..', '..', 'index.ts');
/** What starts a writer again when it exits. */
const SUPERVISE = resolve(import.meta.dir, 'supervise.ts');
const SHARDS = 2;
const NODES = 2;

/**
 * `cluster up`: PostgreSQL, Redis, two ClickHouse shards (the events table Distributed over both),
 * then node 0 (which makes the first account, as `npm start` does, from BOOTSTRAP_*), node 1 and
 * one writer, under a supervisor that starts it again whenever it exits. Everything listens on
 * free loopback ports and keeps its data under `dir`. Each process is recorded in
 * DIR/cluster.json as soon as it runs: a failure half-way is cleaned up by `down`, by PID.
 */
export async function clusterUp(dir: string): Promise<ClusterState & { account: Account }> {
  mkdirSync(join(dir, 'logs'), { recursive: true });
  const previous = readState(dir);
  if (previous && Object.values(previous.pids).some((list) => list.some(isRunning))) {
    throw new Error(`a cluster already runs from ${dir}: stop it first (npm run cluster -- down --dir ${dir})`);
  }
  const state = emptyState();
  const record = (role: keyof ClusterState['pids'], started: Started) => {
    state.pids[role].push(started);
    writeState(dir, { ...state, account: previous?.account });
  };
  const log = (name: string) => join(dir, 'logs', `${name}.log`);

  const pg = await startPostgres(dir, await freePort(), log('postgres'));
  record('postgres', pg.started);
  const redis = await startRedis(dir, await freePort(), log('redis'));
  record('redis', redis.started);
  const shards = [];
  for (let i = 0; i < SHARDS; i++) shards.push({ http: await freePort(), tcp: await freePort() });
  const clickhouse: string[] = [];
  for (let i = 0; i < SHARDS; i++) {
    const ch = await startClickHouse(dir, i, shards, log(`clickhouse-${i}`));
    record('clickhouse', ch.started);
    clickhouse.push(ch.url);
  }
  // Every shard gets its tables (no distributed DDL: ON CLUSTER needs ZooKeeper); writers insert through the first.
  for (const url of clickhouse) {
    const ch = await openClickHouse(parseClickHouseUrl(url));
    try {
      await migrateClickHouse(ch);
    } finally {
      await ch.close();
    }
  }
  state.env = { EVENT_LOG: redis.url, META_STORE: pg.url, EVENTS_STORE: clickhouse[0]! };

  let account = previous?.account;
  for (let i = 0; i < NODES; i++) {
    const { started, url } = await startNode(dir, i, state.env);
    record('nodes', started);
    state.nodes.push(url);
    // Node 0 alone makes the first account (before it listens), so node 1 finds it made.
    if (i === 0 && !account) account = readAccount(started.log);
  }
  const writer = await startWriter(dir, 0, state.env, (started) => record('supervisors', started));
  record('writers', writer);
  if (!account) throw new Error(`node 0 printed no account, and ${dir} has none from an earlier start`);
  const done = { ...state, account };
  writeState(dir, done);
  return done;
}

/** As `npm start` sets them (README, Memory): the runtime settings, unless this process's environment sets them. */
function serverEnv(overrides: Record<string, string>): Record<string, string | undefined> {
  return { ...withRuntimeEnv({ LOG_LEVEL: 'warn', ...process.env }), ...overrides };
}

/** Node `index` (its DATA_DIR, DIR/node-INDEX) on `port` (a free one when not given: `restart` gives the node's own); resolves once it answers. */
export async function startNode(dir: string, index: number, env: Record<string, string>, port?: number, record?: (started: Started) => void): Promise<{ started: Started; url: string }> {
  port ??= await freePort();
  const dataDir = join(dir, `node-${index}`);
  const log = join(dir, 'logs', `node-${index}.log`);
  const started = startDetached([process.execPath, ENTRY], { log, cwd: dir, env: serverEnv({ ...env, ROLE: 'node', HOST: '127.0.0.1', PORT: String(port), DATA_DIR: dataDir }) });
  record?.(started);
  const url = `http://127.0.0.1:${port}`;
  await waitUntil(`node ${index}`, async () => (await fetch(`${url}/_health`)).ok, () => isAlive(started.pid), 60_000, log);
  return { started, url };
}

/**
 * A writer (index: its DATA_DIR, DIR/writer-INDEX) under its supervisor, whose PID `record` is
 * told at once; resolves once the writer writes, with the writer's process.
 */
export async function startWriter(dir: string, index: number, env: Record<string, string>, record: (supervisor: Started) => void): Promise<Started> {
  const log = join(dir, 'logs', `writer-${index}.log`);
  const pidFile = writerPidFile(dir, index);
  rmSync(pidFile, { force: true });
  const supervisor = startDetached([process.execPath, SUPERVISE, pidFile, '--', process.execPath, ENTRY], { log, cwd: dir, env: serverEnv({ ...env, ROLE: 'writer', DATA_DIR: join(dir, `writer-${index}`) }) });
  record(supervisor);
  let writer: Started | null = null;
  await waitUntil(
    `writer ${index}`,
    async () => {
      writer = writerOf(dir, index);
      // Its own line (the consumer name ends in its PID): the log is appended to across restarts.
      return writer !== null && tail(log, 200).includes(`Writing as ${hostname()}-${writer.pid}\n`);
    },
    () => isAlive(supervisor.pid),
    60_000,
    log,
  );
  return writer!;
}

const writerPidFile = (dir: string, index: number) => join(dir, `writer-${index}.pid`);

/** Writer `index` as its supervisor last started it (null: none running, or its supervisor stopped). */
function writerOf(dir: string, index: number): Started | null {
  const path = writerPidFile(dir, index);
  const pid = existsSync(path) ? Number(readFileSync(path, 'utf8')) : NaN;
  if (!Number.isSafeInteger(pid) || pid <= 0) return null;
  return { pid, program: process.execPath, log: join(dir, 'logs', `writer-${index}.log`), argv: [process.execPath, ENTRY], cwd: dir };
}

/** The state with each writer as its supervisor last started it (a writer that exited was started again under another PID). */
export function withCurrentWriters(dir: string, state: ClusterState): ClusterState {
  return { ...state, pids: { ...state.pids, writers: state.pids.writers.map((w, i) => writerOf(dir, i) ?? w) } };
}

/** The first start's account, as node 0 printed it (`npm start`'s "First start" block). */
function readAccount(log: string): Account | undefined {
  if (!existsSync(log)) return undefined;
  const block = /First start:[^\n]*\n(\{[\s\S]*?\n\})/.exec(readFileSync(log, 'utf8'));
  if (!block) return undefined;
  const a = JSON.parse(block[1]!) as Account;
  return { project_id: a.project_id, project_api_key: a.project_api_key, personal_api_key: a.personal_api_key };
}
