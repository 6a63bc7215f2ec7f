import { spawn } from 'node:child_process';
import { renameSync, rmSync, writeFileSync } from 'node:fs';

/**
 * `bun supervise.ts PIDFILE -- ARGV...`: the local cluster's writers run under this, so a
 * writer that exits by itself (`kill -9`, out of memory, a crash) is started again without an
 * operator, as systemd's `Restart=always` or a Kubernetes Deployment would do it in production.
 * The new writer takes the dead one's partitions once their leases run out (15 s) and processes
 * their unacknowledged entries first. The writer's PID is in PIDFILE (for `cluster` to list
 * and signal it); SIGTERM or SIGINT stops the writer cleanly (it finishes its batch and releases
 * its partitions), then this.
 */

/** Waits between starts: doubled after each writer that ran shorter than STEADY_MS, up to MAX_DELAY_MS. */
export const FIRST_DELAY_MS = 1_000;
export const MAX_DELAY_MS = 30_000;
/** A writer that ran this long was healthy: the next one after it waits FIRST_DELAY_MS again. */
export const STEADY_MS = 60_000;

/** The wait before the next start, given how long the last writer ran and the wait before it. */
export function nextDelay(ranMs: number, previousDelayMs: number | null): number {
  if (previousDelayMs === null || ranMs >= STEADY_MS) return FIRST_DELAY_MS;
  return Math.min(previousDelayMs * 2, MAX_DELAY_MS);
}

export interface Supervised {
  pid: number;
  /** Resolves with how it ended. */
  exited: Promise<string>;
  signal(signal: NodeJS.Signals): void;
}

export interface SupervisorDeps {
  start(): Supervised;
  now(): number;
  sleep(ms: number, stopped: Promise<void>): Promise<void>;
  notePid(pid: number | null): void;
  say(line: string): void;
}

/** Start the process, start it again whenever it exits, until `stop` (which stops it too); resolves once it is stopped. */
export function supervise(deps: SupervisorDeps): { done: Promise<void>; stop(signal: NodeJS.Signals): void } {
  let stopping = false;
  let current: Supervised | null = null;
  let stopSignal: NodeJS.Signals = 'SIGTERM';
  let stopped!: () => void;
  const whenStopped = new Promise<void>((resolve) => (stopped = resolve));
  const done = (async () => {
    let delay: number | null = null;
    while (!stopping) {
      const startedAt = deps.now();
      current = deps.start();
      deps.notePid(current.pid);
      const how = await current.exited;
      current = null;
      if (stopping) break;
      delay = nextDelay(deps.now() - startedAt, delay);
      deps.say(`supervisor: the writer exited (${how}) after ${Math.round((deps.now() - startedAt) / 1000)} s; starting it again in ${delay / 1000} s`);
      await deps.sleep(delay, whenStopped);
    }
    deps.notePid(null);
  })();
  return {
    done,
    stop(signal) {
      stopping = true;
      stopSignal = signal;
      current?.signal(stopSignal);
      stopped();
    },
  };
}

async function main(argv: string[]): Promise<number> {
  const dash = argv.indexOf('--');
  const pidFile = argv[0];
  const command = argv.slice(dash + 1);
  if (dash !== 1 || !pidFile || !command.length) {
    console.error('Usage: bun supervise.ts PIDFILE -- ARGV...');
    return 64;
  }
  const supervisor = supervise({
    start() {
      const child = spawn(command[0]!, command.slice(1), { stdio: 'inherit' });
      if (!child.pid) throw new Error(`${command[0]} could not be started`);
      const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(signal ? `signal ${signal}` : `code ${code}`)));
      return { pid: child.pid, exited, signal: (s) => void child.kill(s) };
    },
    now: () => Date.now(),
    sleep: (ms, stopped) => Promise.race([Bun.sleep(ms), stopped]),
    notePid(pid) {
      if (pid === null) return rmSync(pidFile, { force: true });
      // Whole or not at all: `cluster` may read it at any moment.
      writeFileSync(`${pidFile}.tmp`, `${pid}\n`);
      renameSync(`${pidFile}.tmp`, pidFile);
    },
    say: (line) => console.error(line),
  });
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => supervisor.stop(signal));
  await supervisor.done;
  return 0;
}

if (import.meta.main) process.exit(await main(process.argv.slice(2)));
