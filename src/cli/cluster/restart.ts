import { clickhouseAnswers, clickhouseHttpPort, redisAnswers } from './engines';
import { isAlive, startDetached, stopAll, waitUntil, writeState, type ClusterState, type Role } from './processes';

/**
 * `cluster restart redis|clickhouse-N`: one engine of a running cluster stopped (SIGTERM, killed
 * after a grace period; nothing to do when it is already gone) and started again with the same
 * command: the same port, data directory and configuration, so nodes and writers find it where
 * it was. Its new PID replaces the old one in DIR/cluster.json. For trying faults by hand and for
 * the fault tests; nodes and writers are not restarted this way (`add-writer` starts a writer).
 */
export const RESTARTABLE = 'redis | clickhouse-N (N from 0)';

interface Target {
  role: Role;
  index: number;
  ready: () => Promise<boolean>;
}

function targetOf(dir: string, state: ClusterState, name: string): Target {
  if (name === 'redis') return { role: 'redis', index: 0, ready: () => redisAnswers(state.env.EVENT_LOG!) };
  const shard = /^clickhouse-(\d+)$/.exec(name);
  if (shard && Number(shard[1]) < state.pids.clickhouse.length) {
    const port = clickhouseHttpPort(dir, Number(shard[1]));
    return { role: 'clickhouse', index: Number(shard[1]), ready: () => clickhouseAnswers(port) };
  }
  throw new RestartError(`cannot restart "${name}": one of ${RESTARTABLE} (${state.pids.clickhouse.length} ClickHouse servers)`);
}

export class RestartError extends Error {}

/** Resolves once the engine answers again; the state (with its new PID) is written as soon as it runs. */
export async function restartEngine(dir: string, state: ClusterState, name: string): Promise<void> {
  const target = targetOf(dir, state, name);
  const old = state.pids[target.role][target.index];
  if (!old?.argv || !old.cwd) throw new RestartError(`${name} was started by an older version of this command (no command line recorded): restart the cluster`);
  // ClickHouse may take ~10 s to stop cleanly; a minute before it is killed, as `down` gives it.
  await stopAll([old], 'SIGTERM', 60_000);
  const started = startDetached(old.argv, { log: old.log, cwd: old.cwd });
  state.pids[target.role][target.index] = started;
  writeState(dir, state);
  await waitUntil(name, target.ready, () => isAlive(started.pid), 60_000, old.log);
}
