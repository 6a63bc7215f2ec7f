import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { missingEngines } from './engines';
import { readState, ROLES, startDetached, stopAll, writeState, type ClusterState } from './processes';
import { RESTARTABLE, restartProcess, RestartError } from './restart';
import { clusterUp, startWriter, withCurrentWriters } from './up';

/**
 * `npm run cluster -- up|down|add-writer|restart --dir DIR`: a local cluster for trying cluster mode (see
 * the README's Cluster mode). `up` prints, as its last line, one JSON object: the nodes' URLs, the
 * project and keys, and the PIDs of every role.
 */
const USAGE = `Usage: npm run cluster -- <command> --dir DIR

Commands:
  up [--owner-pid PID]
              Start PostgreSQL, Redis, two ClickHouse shards, two nodes and one writer (under a
              supervisor that starts it again whenever it exits), data under DIR.
              Last line of output: {"nodes": [...], "project_id", "project_api_key", "personal_api_key", "pids": {...}}
              With --owner-pid, down runs by itself once that process is gone (tests).
  add-writer  Start one more writer (under its supervisor) for the cluster of DIR.
  restart NAME
              NAME: ${RESTARTABLE}. Stop that process (by PID; nothing to do if it is gone) and
              start it again on the same port, data and configuration (a node on its port, a
              writer with its DATA_DIR); prints the summary once it answers.
  down        Stop every process the cluster of DIR started (by PID), writers and nodes first.`;

/** How long each role may take to stop on its signal before it is killed. */
const STOP = [
  // Nodes drain their requests (up to 10 s); a supervisor stops its writer (which finishes its
  // batch and releases its partitions) and waits for it. Then any writer whose supervisor was
  // killed meanwhile.
  { roles: ['nodes', 'supervisors'], signal: 'SIGTERM', graceMs: 30_000 },
  { roles: ['writers'], signal: 'SIGTERM', graceMs: 30_000 },
  // PostgreSQL's fast shutdown (SIGINT); Redis and ClickHouse stop cleanly on SIGTERM (ClickHouse takes ~10 s).
  { roles: ['postgres'], signal: 'SIGINT', graceMs: 30_000 },
  { roles: ['redis', 'clickhouse'], signal: 'SIGTERM', graceMs: 60_000 },
] as const;

/**
 * `--owner-pid PID` (tests): once that process is gone, however it ended, `down` runs for DIR. A
 * shell in a session of its own, so it outlives this command; it ends after that `down`.
 */
function watchOwner(owner: number, dir: string) {
  if (!Number.isSafeInteger(owner) || owner <= 0) throw new Error('--owner-pid takes a process id');
  const script = 'while [ -d /proc/$0 ]; do sleep 0.5; done; [ -f "$1/cluster.json" ] && exec "$2" "$3" down --dir "$1"';
  startDetached(['/bin/sh', '-c', script, String(owner), dir, process.execPath, import.meta.path], { log: join(dir, 'logs', 'owner-watch.log'), cwd: dir });
}

async function stopCluster(state: ClusterState): Promise<void> {
  for (const stage of STOP) {
    const killed = await stopAll(stage.roles.flatMap((r) => state.pids[r]), stage.signal, stage.graceMs);
    if (killed.length) console.error(`Killed after ${stage.graceMs / 1000} s: ${stage.roles.join(', ')} ${killed.join(' ')}`);
  }
}

function summary(state: ClusterState & { account: NonNullable<ClusterState['account']> }) {
  const pids = Object.fromEntries(ROLES.map((role) => [role, state.pids[role].map((p) => p.pid)]));
  return { nodes: state.nodes, ...state.account, pids };
}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({ args: argv, options: { dir: { type: 'string' }, 'owner-pid': { type: 'string' } }, allowPositionals: true });
  const command = positionals[0];
  if (!values.dir || !['up', 'down', 'add-writer', 'restart'].includes(command ?? '') || (command === 'restart') !== (positionals.length === 2) || (command !== 'restart' && positionals.length > 1)) {
    console.error(USAGE);
    return 64;
  }
  const dir = resolve(values.dir);
  if (command === 'down') {
    const state = readState(dir);
    if (!state) {
      console.error(`No cluster was started from ${dir} (no cluster.json).`);
      return 1;
    }
    // The writers as their supervisors last started them, read before the supervisors stop them.
    const current = withCurrentWriters(dir, state);
    writeState(dir, current);
    await stopCluster(current);
    console.log(`Stopped the cluster of ${dir}.`);
    return 0;
  }
  const missing = missingEngines();
  if (missing.length) {
    console.error(`Cluster mode's engines are missing: ${missing.join('; ')}.`);
    return 69;
  }
  if (command === 'add-writer' || command === 'restart') {
    const recorded = readState(dir);
    if (!recorded?.account) {
      console.error(`No cluster runs from ${dir}: start one with up.`);
      return 1;
    }
    const state = withCurrentWriters(dir, recorded);
    if (command === 'restart') {
      try {
        await restartProcess(dir, state, positionals[1]!);
      } catch (error) {
        console.error(error instanceof Error ? error.message : String(error));
        return error instanceof RestartError ? 64 : 1;
      }
      console.log(JSON.stringify(summary({ ...state, account: recorded.account })));
      return 0;
    }
    const index = state.pids.writers.length;
    const writer = await startWriter(dir, index, state.env, (supervisor) => {
      state.pids.supervisors[index] = supervisor;
      writeState(dir, state);
    });
    state.pids.writers.push(writer);
    writeState(dir, state);
    console.log(JSON.stringify(summary({ ...state, account: recorded.account })));
    return 0;
  }
  mkdirSync(join(dir, 'logs'), { recursive: true });
  // Before anything starts: a test that dies outright still has its cluster stopped.
  if (values['owner-pid']) watchOwner(Number(values['owner-pid']), dir);
  try {
    console.log(JSON.stringify(summary(await clusterUp(dir))));
    return 0;
  } catch (error) {
    console.error(`The cluster did not start: ${error instanceof Error ? error.message : String(error)}`);
    const started = readState(dir);
    if (started) await stopCluster(started);
    return 1;
  }
}

process.exit(await main(process.argv.slice(2)));
