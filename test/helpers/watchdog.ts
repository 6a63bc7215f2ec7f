import { spawnSync } from 'node:child_process';

/**
 * Runs a server and stops it by its PID (with `signal`), then removes its directory, when the
 * test process is gone, however it ended: bun test fires no exit event, and a test process killed
 * outright must not leave a server behind either. Also stopped by SIGTERM. A server that stopped
 * by itself (its port was taken) leaves the directory for the next try.
 * Arguments: the signal, the test process's PID, the directory, then the server's command line.
 */
const WATCHDOG = `
sig=$1; parent=$2; dir=$3; shift 3
"$@" &
srv=$!
trap 'kill -$sig $srv 2>/dev/null; wait $srv; rm -rf "$dir"; exit 0' TERM INT
while [ -d /proc/$parent ] && kill -0 $srv 2>/dev/null; do sleep 0.5; done
kill -$sig $srv 2>/dev/null
wait $srv
[ -d /proc/$parent ] || rm -rf "$dir"
`;

/**
 * Start `argv` under the watchdog, its output in `log`. The watchdog is started in a session of
 * its own by a shell that exits at once: it is no child of this process, so bun test never takes
 * it for a test's dangling process.
 */
export function launchWatched(options: { name: string; dir: string; argv: readonly string[]; log: string; signal: 'INT' | 'KILL'; uid?: number; gid?: number }): void {
  const launched = spawnSync(
    '/bin/sh',
    ['-c', `setsid /bin/sh -c "$0" ${options.name}-watchdog "$@" </dev/null >"$LOG" 2>&1 &`, WATCHDOG, options.signal, String(process.pid), options.dir, ...options.argv],
    { ...(options.uid === undefined ? {} : { uid: options.uid, gid: options.gid }), cwd: options.dir, env: { ...process.env, LOG: options.log }, stdio: 'ignore' },
  );
  if (launched.status !== 0) throw new Error(`the ${options.name} watchdog could not be started`);
}

/** A free loopback port (another process may take it before it is used: callers retry). */
export { freePort } from '../../src/cli/cluster/processes';
