import { postgresUser } from '../../src/cli/cluster/engines';
import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SQL } from 'bun';
import { processWide, namesOfThisFile } from './process-wide';
import { freePort, launchWatched } from './watchdog';

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

let server: Promise<Server> | null = null;
const databaseName = namesOfThisFile('hogbase_test');

/**
 * The process's server (started by the first file that asks), and a connection of this file's to
 * it, closed while idle (made again when next used): a worker process runs ~80 files, each of
 * which kept its own open until the process ended.
 */
const connect = async (): Promise<Server> => {
  const port = Number(await processWide('postgres-port', async () => String(await start())));
  return { port, admin: new SQL(`postgres://postgres@127.0.0.1:${port}/postgres`, { max: 1, idleTimeout: 2 }) };
};

/** A new, empty database on the run's server; its `postgres://` URL. */
export async function createTestDatabase(): Promise<string> {
  const { port, admin } = await (server ??= connect());
  const name = databaseName();
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
const serverUser = postgresUser;

async function start(): Promise<number> {
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
    launchWatched({ name: 'postgres', dir, argv: server, log, signal: 'INT', ...as });
    const admin = new SQL(`postgres://postgres@127.0.0.1:${port}/postgres`, { max: 1 });
    const started = Date.now();
    while (Date.now() - started < 20_000) {
      try {
        await admin.unsafe('SELECT 1');
        await admin.close();
        return port;
      } catch {
        // A connection tried while the server starts is refused with a FATAL line of its own: not a failure.
        if (/FATAL: (?!\s*the database system is starting up)/.test(readLog(log))) break;
        await Bun.sleep(50);
      }
    }
    await admin.close().catch(() => undefined);
    lastError = readLog(log);
    stopByPid(data);
  }
  throw new Error(`PostgreSQL did not start: ${lastError}`);
}

type Statement = readonly [text: string, params?: readonly unknown[]];

/**
 * `run` (work on the database at `url`) against a lock another process holds: another connection
 * runs `held` in a transaction and keeps what it locked; `run` starts, and once a backend of the
 * database waits for a lock (throws if none does), the other runs `then` when given and commits.
 * With `then` asking for what `run` took meanwhile, `run` is a deadlock's victim: PostgreSQL ends
 * the cycle by failing its transaction (it waited first; the other's check is set far later), and
 * a victim that runs again waits for the other's commit. `run`'s value, or the SQLSTATE it failed with.
 */
export async function againstHeldLock<T>(url: string, held: Statement, run: () => Promise<T>, then?: Statement): Promise<{ value: T | null; state: string | null }> {
  const other = new SQL(url, { max: 2 });
  const holder = await other.reserve();
  try {
    await holder.unsafe('BEGIN');
    await holder.unsafe("SET LOCAL deadlock_timeout = '20s'");
    await holder.unsafe(held[0], [...(held[1] ?? [])]);
    const outcome = run().then(
      (value) => ({ value, state: null }),
      (error: { errno?: unknown }) => ({ value: null, state: String(error?.errno ?? error) }),
    );
    const waiting = async () =>
      ((await other.unsafe("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")) as Array<{ n: number }>)[0].n > 0;
    let waited = false;
    for (let i = 0; i < 400 && !(waited = await waiting()); i++) await Bun.sleep(25);
    if (!waited) throw new Error('nothing waited for the lock held');
    if (then) await holder.unsafe(then[0], [...(then[1] ?? [])]);
    await holder.unsafe('COMMIT');
    return await outcome;
  } finally {
    holder.release();
    await other.close();
  }
}
