import { SQL } from 'bun';
import { clickhouseAnswers, clickhouseHttpPort, postgresUser, redisAnswers } from './engines';
import { isAlive, startDetached, stopAll, waitUntil, writeState, type ClusterState, type Role, type Started } from './processes';
import { startNode, startWriter } from './up';

/**
 * `cluster restart NAME`: one process of a running cluster stopped (its role's signal, killed
 * after a grace period; nothing to do when it is already gone) and started again as it was: an
 * engine with the same command (port, data directory, configuration), a node on its own port and
 * DATA_DIR, a writer with its DATA_DIR under a new supervisor (a new consumer name: it takes its partitions back once
 * their leases run out, or at once after a clean stop). Its new PID replaces the old one in
 * DIR/cluster.json. For trying faults by hand and for the fault tests.
 */
export const RESTARTABLE = 'postgres | redis | clickhouse-N | node-N | writer-N (N from 0)';

interface Target {
  role: Role;
  index: number;
  /** How it stops cleanly: PostgreSQL's fast shutdown is SIGINT (SIGTERM waits for every client to leave). */
  signal: NodeJS.Signals;
  /** Start it again, `record`ing the new process as soon as it runs (a start that fails is still stopped by `down`). */
  start(old: Started, record: (started: Started) => void): Promise<void>;
}

/** Start the same command again; resolves once `ready` answers. */
const again = (name: string, ready: () => Promise<boolean>, as: { uid?: number; gid?: number } = {}) => async (old: Started, record: (started: Started) => void) => {
  if (!old.argv || !old.cwd) throw new RestartError(`${name} was started by an older version of this command (no command line recorded): restart the cluster`);
  const started = startDetached(old.argv, { log: old.log, cwd: old.cwd, ...as });
  record(started);
  await waitUntil(name, ready, () => isAlive(started.pid), 60_000, old.log);
};

async function postgresAnswers(url: string): Promise<boolean> {
  const probe = new SQL(url, { max: 1, connectionTimeout: 1 });
  try {
    await probe.unsafe('SELECT 1');
    return true;
  } finally {
    await probe.close().catch(() => undefined);
  }
}

function targetOf(dir: string, state: ClusterState, name: string): Target {
  const [, kind, n] = /^(postgres|redis|clickhouse|node|writer)(?:-(\d+))?$/.exec(name) ?? [];
  const index = Number(n ?? 0);
  const count = (role: Role) => state.pids[role].length;
  if (kind === 'postgres' && n === undefined) return { role: 'postgres', index, signal: 'SIGINT', start: again(name, () => postgresAnswers(state.env.META_STORE!), postgresUser() ?? {}) };
  if (kind === 'redis' && n === undefined) return { role: 'redis', index, signal: 'SIGTERM', start: again(name, () => redisAnswers(state.env.EVENT_LOG!)) };
  if (kind === 'clickhouse' && n !== undefined && index < count('clickhouse')) {
    const port = clickhouseHttpPort(dir, index);
    return { role: 'clickhouse', index, signal: 'SIGTERM', start: again(name, () => clickhouseAnswers(port)) };
  }
  if (kind === 'node' && n !== undefined && index < count('nodes')) {
    const port = Number(new URL(state.nodes[index]!).port);
    return { role: 'nodes', index, signal: 'SIGTERM', start: async (_, record) => void (await startNode(dir, index, state.env, port, record)) };
  }
  if (kind === 'writer' && n !== undefined && index < count('supervisors')) {
    // Its supervisor, which stops the writer and waits for it; both started again.
    return { role: 'supervisors', index, signal: 'SIGTERM', start: async (_, record) => void (state.pids.writers[index] = await startWriter(dir, index, state.env, record)) };
  }
  throw new RestartError(`cannot restart "${name}": one of ${RESTARTABLE} (${count('clickhouse')} ClickHouse servers, ${count('nodes')} nodes, ${count('supervisors')} writers)`);
}

export class RestartError extends Error {}

/** Resolves once the process answers again; the state (with its new PID) is written as soon as it runs. */
export async function restartProcess(dir: string, state: ClusterState, name: string): Promise<void> {
  const target = targetOf(dir, state, name);
  const old = state.pids[target.role][target.index]!;
  // ClickHouse may take ~10 s to stop cleanly, a node drains for up to 10 s: a minute before it is killed, as `down` gives it.
  await stopAll([old], target.signal, 60_000);
  await target.start(old, (started) => {
    state.pids[target.role][target.index] = started;
    writeState(dir, state);
  });
  writeState(dir, state);
}
