import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SQL } from 'bun';

/**
 * One PostgreSQL server for the whole test run, started from the Debian binaries on a free
 * loopback port in a temporary directory (as its own user when the tests run as root: PostgreSQL
 * refuses to run as root), and stopped by its PID once the test process has exited. Each suite takes
 * a database of its own from it (`createTestDatabase`). Without the binaries, `postgresAvailable`
 * is false and the PostgreSQL halves of the suites are skipped (`.ci/run` installs them).
 */

const BIN_ROOT = '/usr/lib/postgresql';

function findBinaries(): string | null {
  const preferred = join(BIN_ROOT, '15', 'bin');
  if (existsSync(join(preferred, 'postgres'))) return preferred;
  if (!existsSync(BIN_ROOT)) return null;
  const versions = readdirSync(BIN_ROOT).filter((v) => existsSync(join(BIN_ROOT, v, 'bin', 'postgres'))).sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(BIN_ROOT, versions[0], 'bin') : null;
}

const BIN = findBinaries();
export const postgresAvailable = BIN !== null;
export const POSTGRES_SKIP_REASON = `PostgreSQL server binaries not found under ${BIN_ROOT}/<version>/bin (apt-get install postgresql-15): the PostgreSQL half of the storage suites is skipped`;
if (!postgresAvailable) console.warn(`[tests] ${POSTGRES_SKIP_REASON}`);

interface Server {
  port: number;
  admin: SQL;
}

/**
 * Runs the server and stops it by its PID (SIGINT: a fast shutdown), then removes its directory,
 * when the test process is gone, however it ended: bun test fires no exit event, and a test
 * process killed outright must not leave a server behind either. Also stopped by SIGTERM. A
 * server that stopped by itself (its port was taken) leaves the directory for the next try.
 * Arguments: the test process's PID, the directory, then the server's command line.
 */
const WATCHDOG = `
parent=$1; dir=$2; shift 2
"$@" &
pg=$!
trap 'kill -INT $pg 2>/dev/null; wait $pg; rm -rf "$dir"; exit 0' TERM INT
while [ -d /proc/$parent ] && kill -0 $pg 2>/dev/null; do sleep 0.5; done
kill -INT $pg 2>/dev/null
wait $pg
[ -d /proc/$parent ] || rm -rf "$dir"
`;

let server: Promise<Server> | null = null;
let databases = 0;

/** A new, empty database on the run's server; its `postgres://` URL. */
export async function createTestDatabase(): Promise<string> {
  const { port, admin } = await (server ??= start());
  const name = `hogbase_test_${process.pid}_${++databases}`;
  await admin.unsafe(`CREATE DATABASE ${name}`);
  return `postgres://postgres@127.0.0.1:${port}/${name}`;
}

const readLog = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8') : '');

/** A server that did not come up: SIGINT to the PID its data directory names (the watchdog then ends too). */
function stopByPid(data: string) {
  const pidFile = join(data, 'postmaster.pid');
  const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').split('\n')[0]) : 0;
  if (pid > 0) {
    try {
      process.kill(pid, 'SIGINT');
    } catch {
      // already gone
    }
  }
}

/** The user the server runs as: PostgreSQL refuses root. */
function serverUser(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  for (const name of ['postgres', 'nobody']) {
    const uid = spawnSync('id', ['-u', name]);
    const gid = spawnSync('id', ['-g', name]);
    if (uid.status === 0 && gid.status === 0) return { uid: Number(uid.stdout.toString()), gid: Number(gid.stdout.toString()) };
  }
  throw new Error('running as root, and neither a postgres nor a nobody user exists to run PostgreSQL as');
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });

async function start(): Promise<Server> {
  if (!BIN) throw new Error(POSTGRES_SKIP_REASON);
  const user = serverUser();
  const dir = mkdtempSync(join(tmpdir(), 'hogbase-pg-'));
  const data = join(dir, 'data');
  if (user) chownSync(dir, user.uid, user.gid);
  const as = user ? { uid: user.uid, gid: user.gid } : {};
  const init = spawnSync(join(BIN, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--locale=C'], { ...as, cwd: dir });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr.toString()}`);
  // A port taken between the probe and the start: try another (bounded).
  let lastError = '';
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const log = join(dir, `server-${attempt}.log`);
    const server = [join(BIN, 'postgres'), '-D', data, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${dir}`,
      // A test server: nothing needs to survive a crash of the machine.
      '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=300'];
    // The watchdog is started in a session of its own by a shell that exits at once: it is no
    // child of this process, so bun test never takes it for a test's dangling process.
    const launched = spawnSync('/bin/sh', ['-c', 'setsid /bin/sh -c "$0" postgres-watchdog "$@" </dev/null >"$LOG" 2>&1 &', WATCHDOG, String(process.pid), dir, ...server], {
      ...as,
      cwd: dir,
      env: { ...process.env, LOG: log },
      stdio: 'ignore',
    });
    if (launched.status !== 0) throw new Error('the PostgreSQL watchdog could not be started');
    const admin = new SQL(`postgres://postgres@127.0.0.1:${port}/postgres`, { max: 1 });
    const started = Date.now();
    while (Date.now() - started < 20_000) {
      try {
        await admin.unsafe('SELECT 1');
        return { port, admin };
      } catch {
        if (readLog(log).includes('FATAL')) break;
        await Bun.sleep(50);
      }
    }
    await admin.close().catch(() => undefined);
    lastError = readLog(log);
    stopByPid(data);
  }
  throw new Error(`PostgreSQL did not start: ${lastError}`);
}
