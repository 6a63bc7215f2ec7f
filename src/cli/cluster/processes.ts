import { spawn } from 'node:child_process';
import { existsSync, openSync, closeSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { basename, join } from 'node:path';

/**
 * The local cluster's processes: started detached (their own session, output in DIR/logs), so
 * they outlive the `up` command; recorded in DIR/cluster.json as they start, so `down` stops
 * exactly them, by PID, even after an `up` that failed half-way.
 */
export type Role = 'nodes' | 'writers' | 'supervisors' | 'clickhouse' | 'postgres' | 'redis';
/**
 * `supervisors`: one per writer, which starts its writer again whenever it exits (supervise.ts);
 * `writers` are the writer processes themselves, as their supervisors last started them.
 */
export const ROLES: readonly Role[] = ['nodes', 'writers', 'supervisors', 'clickhouse', 'postgres', 'redis'];

export interface Started {
  pid: number;
  /** The program, checked against /proc/PID/cmdline before a signal (a PID reused by another program is left alone). */
  program: string;
  log: string;
  /** How it was started (engines: `restart` starts the same command again, on the same port and files). */
  argv?: string[];
  cwd?: string;
}

export interface ClusterState {
  pids: Record<Role, Started[]>;
  /** What nodes and writers are started with (EVENT_LOG, META_STORE, EVENTS_STORE), for `add-writer`. */
  env: Record<string, string>;
  nodes: string[];
  account?: Account;
}

export interface Account {
  project_id: number;
  project_api_key: string;
  personal_api_key: string;
}

export const statePath = (dir: string) => join(dir, 'cluster.json');

export function readState(dir: string): ClusterState | null {
  const path = statePath(dir);
  if (!existsSync(path)) return null;
  const state = JSON.parse(readFileSync(path, 'utf8')) as ClusterState;
  // A cluster started before writers had supervisors has none.
  return { ...state, pids: { ...emptyState().pids, ...state.pids } };
}

export const writeState = (dir: string, state: ClusterState) => writeFileSync(statePath(dir), `${JSON.stringify(state, null, 2)}\n`);

export function emptyState(): ClusterState {
  return { pids: { nodes: [], writers: [], supervisors: [], clickhouse: [], postgres: [], redis: [] }, env: {}, nodes: [] };
}

/** Start `argv` in a session of its own, its output appended to `log`; its PID. */
export function startDetached(argv: readonly string[], options: { log: string; cwd: string; env?: Record<string, string | undefined>; uid?: number; gid?: number }): Started {
  const fd = openSync(options.log, 'a');
  try {
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: options.cwd,
      env: options.env ?? process.env,
      detached: true,
      stdio: ['ignore', fd, fd],
      ...(options.uid === undefined ? {} : { uid: options.uid, gid: options.gid }),
    });
    if (!child.pid) throw new Error(`${argv[0]} could not be started`);
    child.unref();
    return { pid: child.pid, program: argv[0]!, log: options.log, argv: [...argv], cwd: options.cwd };
  } finally {
    closeSync(fd);
  }
}

/**
 * Whether the PID is a live process: not a zombie (which only waits for its parent to read its
 * status), and not a thread of another process (/proc/TID answers too, and thread ids share the
 * PID space, so a dead process's PID is soon some thread's).
 */
export function isAlive(pid: number): boolean {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return new RegExp(`^Tgid:\\s+${pid}$`, 'm').test(status) && !/^State:\s+Z/m.test(status);
  } catch {
    return false;
  }
}

/**
 * Whether the process runs as the program it was started as. Not for a process just spawned: until
 * its exec, its command line is still this one's.
 */
export function isRunning(p: Pick<Started, 'pid' | 'program'>): boolean {
  if (!isAlive(p.pid)) return false;
  try {
    // Redis rewrites its command line ("/usr/bin/redis-server 127.0.0.1:6379"): the program's name in it is enough.
    return readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').includes(basename(p.program));
  } catch {
    return false;
  }
}

/** Poll `ready` until it answers true; fails when `alive` says the process is gone, or after `timeoutMs`. */
export async function waitUntil(what: string, ready: () => Promise<boolean>, alive: () => boolean, timeoutMs: number, log?: string): Promise<void> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (await ready().catch(() => false)) return;
    if (!alive()) throw new Error(`${what} stopped while starting${log ? `; the end of ${log}:\n${tail(log)}` : ''}`);
    await Bun.sleep(50);
  }
  throw new Error(`${what} did not become ready in ${timeoutMs / 1000} s${log ? `; the end of ${log}:\n${tail(log)}` : ''}`);
}

export function tail(path: string, lines = 20): string {
  return existsSync(path) ? readFileSync(path, 'utf8').split('\n').slice(-lines).join('\n') : '(no output)';
}

/**
 * Signal the processes (those still running as the program they were started as), wait for them
 * to exit, and kill what is left after `graceMs`. Resolves to the PIDs that had to be killed.
 */
export async function stopAll(processes: readonly Started[], signal: NodeJS.Signals, graceMs: number): Promise<number[]> {
  const running = processes.filter(isRunning);
  for (const p of running) signalPid(p.pid, signal);
  const started = Date.now();
  while (running.some(isRunning) && Date.now() - started < graceMs) await Bun.sleep(50);
  const killed = running.filter(isRunning);
  for (const p of killed) signalPid(p.pid, 'SIGKILL');
  while (killed.some(isRunning)) await Bun.sleep(20);
  return killed.map((p) => p.pid);
}

function signalPid(pid: number, signal: NodeJS.Signals) {
  try {
    process.kill(pid, signal);
  } catch {
    // gone meanwhile
  }
}

/**
 * A free loopback port, drawn below the kernel's ephemeral range (32768 and up on Linux): a port
 * the kernel hands out itself (`listen(0)`, or the local end of any outgoing connection, such as
 * a ClickHouse server's to ZooKeeper) could be taken between this probe and the start of the
 * server it is meant for. Another process may still pick the same number by chance: a start that
 * fails on it is reported.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = PORTS_FROM + Math.floor(Math.random() * (PORTS_TO - PORTS_FROM));
    if (await canListen(port)) return port;
  }
  throw new Error(`no free loopback port found between ${PORTS_FROM} and ${PORTS_TO}`);
}

const PORTS_FROM = 20_000;
const PORTS_TO = 32_768;

const canListen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
