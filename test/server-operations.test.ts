import { afterAll, describe, expect, test } from 'bun:test';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RUNTIME_ENV } from '../src/runtime-env';
import { ROOT, TEST_KEYS, newDataDir, runCliProcess, startServer } from './helpers/server-process';

/** What a supervisor sees of the server process: ports, signals, bad settings. */
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const auth = { authorization: `Bearer ${TEST_KEYS.personal}` };

/** Run `bun src/index.ts` to its exit (it must not start: these are refusals). */
async function runRefused(env: Record<string, string>) {
  const proc = Bun.spawn([process.execPath, 'src/index.ts'], {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'warn', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const killer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(killer);
  return { stdout, stderr, code };
}

/** Whether a listener without SO_REUSEPORT can take the port: nothing else holds it. */
function portFree(port: number): boolean {
  try {
    Bun.serve({ hostname: '127.0.0.1', port, reusePort: false, fetch: () => new Response(null) }).stop(true);
    return true;
  } catch {
    return false;
  }
}

describe('one server per port', () => {
  test('a second server on a taken port exits 75 with one line, creating nothing; REUSE_PORT=on shares it deliberately', async () => {
    const first = await startServer();
    dirs.push(first.dataDir);
    const secondDir = join(await newDataDir(), 'second');
    dirs.push(secondDir);
    const refused = await runRefused({ PORT: String(first.port), DATA_DIR: secondDir });
    expect(refused).toEqual({
      stdout: '',
      stderr: `Port ${first.port} on 127.0.0.1 is in use by another process: stop it or choose another PORT (REUSE_PORT=on shares the port deliberately).\n`,
      code: 75,
    });
    expect(existsSync(secondDir)).toBe(false);
    // Every request still reaches the first server's data.
    for (let i = 0; i < 5; i++) expect((await fetch(`${first.url}/api/users/@me/`, { headers: auth })).status).toBe(200);
    await first.stop();

    const a = await startServer({ REUSE_PORT: 'on' });
    dirs.push(a.dataDir);
    const b = await startServer({ REUSE_PORT: 'on', PORT: String(a.port) });
    dirs.push(b.dataDir);
    expect(b.port).toBe(a.port);
    expect(await b.stop()).toBe(0);
    expect(await a.stop()).toBe(0);
  });
});

describe('signals', () => {
  test("SIGTERM to the README's start command (npm start) stops the server: exit 0 within the bound, port free, database closed", async () => {
    const server = await startServer({}, undefined, ['npm', 'start']);
    dirs.push(server.dataDir);
    expect((await fetch(`${server.url}/_health`)).status).toBe(200);
    const started = performance.now();
    const code = await server.stop('SIGTERM');
    // A supervisor's grace period (Docker's is 10 s) must not be spent waiting.
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(code).toBe(0);
    expect(portFree(server.port)).toBe(true);
    const listed = await runCliProcess(['list-keys', '--email', TEST_KEYS.email, '--json'], server.dataDir);
    expect(listed.code).toBe(0);
  });
});

describe("the README's start command", () => {
  test("npm start gives the server its runtime settings: 16 pool threads, two malloc arenas, a second's purge delay, DuckDB's five-second decay and one arena (unless already set)", async () => {
    const env = { UV_THREADPOOL_SIZE: '', MALLOC_ARENA_MAX: '', MIMALLOC_PURGE_DELAY: '', DUCKDB_JE_MALLOC_CONF: '' };
    const server = await startServer(env, undefined, ['npm', 'start']);
    dirs.push(server.dataDir);
    try {
      expect((await fetch(`${server.url}/_health`)).status).toBe(200);
      // The server is npm's shell's exec'd bun: the process running src/index.ts with this DATA_DIR.
      const environOf = (pid: string) => {
        try {
          return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
        } catch {
          return [];
        }
      };
      const pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p) && environOf(p).includes(`DATA_DIR=${server.dataDir}`) && readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('src/index.ts'));
      expect(pids).toHaveLength(1);
      const serverEnv = environOf(pids[0]!);
      // The shell's copy in package.json gives what the cluster and the benches take from src/runtime-env.ts.
      expect(Object.keys(RUNTIME_ENV)).toEqual(['UV_THREADPOOL_SIZE', 'MALLOC_ARENA_MAX', 'MIMALLOC_PURGE_DELAY', 'DUCKDB_JE_MALLOC_CONF']);
      for (const [name, value] of Object.entries(RUNTIME_ENV)) expect(serverEnv).toContain(`${name}=${value}`);
      expect(serverEnv).toContain('DUCKDB_JE_MALLOC_CONF=dirty_decay_ms:5000,muzzy_decay_ms:5000,narenas:1');
    } finally {
      await server.stop();
    }
  });
});

describe('bad settings', () => {
  test.each([
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL: expected one of debug, info, warn, error, silent; got "loud"'],
    [{ DURABILITY: 'fast' }, 'DURABILITY: expected one of durable, relaxed; got "fast"'],
    [{ DUCKDB_MEMORY_LIMIT: 'plenty' }, 'DUCKDB_MEMORY_LIMIT: expected a value such as 1GB or 512MB or 4GiB; got "plenty"'],
    [{ PORT: '70000' }, 'PORT: expected an integer from 0 to 65535; got "70000"'],
    [{ MIN_FREE_DISK_MB: 'some' }, 'MIN_FREE_DISK_MB: expected an integer from 0 to 1048576; got "some"'],
    [{ HOST: 'nonsense' }, 'HOST: cannot listen on "nonsense" (EINVAL); expected an address of this machine, a value such as 0.0.0.0 or 127.0.0.1 or ::'],
    [{ HOST: '192.0.2.1' }, 'HOST: cannot listen on "192.0.2.1" (EADDRNOTAVAIL); expected an address of this machine, a value such as 0.0.0.0 or 127.0.0.1 or ::'],
  ])('%j: one line naming what it takes, exit 78, nothing created', async (env, line) => {
    const dataDir = join(await newDataDir(), 'data');
    dirs.push(dataDir);
    expect(await runRefused({ ...env, DATA_DIR: dataDir })).toEqual({ stdout: '', stderr: `Invalid configuration: ${line}\n`, code: 78 });
    expect(existsSync(dataDir)).toBe(false);
  });

  test('a DATA_DIR that is a file is refused the same way', async () => {
    const parent = await newDataDir();
    dirs.push(parent);
    const file = join(parent, 'not-a-dir');
    await writeFile(file, 'x');
    expect(await runRefused({ DATA_DIR: file })).toEqual({
      stdout: '',
      stderr: `Invalid configuration: DATA_DIR: ${JSON.stringify(file)} is not a directory; expected a writable directory (made if missing), such as ./data\n`,
      code: 78,
    });
  });
});

describe('a database written by a newer version', () => {
  test('the server refuses it with one line and exit 78, and the CLI with exit 2, leaving it as it was', async () => {
    const { openDatabase } = await import('../src/storage/db');
    const { DATABASE_FILE } = await import('../src/storage');
    const server = await startServer();
    dirs.push(server.dataDir);
    await server.stop();
    const file = join(server.dataDir, DATABASE_FILE);
    const recordNewer = async () => {
      const db = await openDatabase(file, { readers: 1 });
      try {
        await db.run(`INSERT INTO schema_migrations (version, name) VALUES (9999, 'a later release''s table')`);
        return (await db.query<{ n: number }>('SELECT count(*)::INTEGER AS n FROM schema_migrations'))[0]?.n;
      } finally {
        await db.close();
      }
    };
    const before = await recordNewer();
    const refused = await runRefused({ DATA_DIR: server.dataDir });
    expect(refused).toEqual({
      stdout: '',
      stderr:
        "The database was written by a newer version of this server (schema migrations it does not know: 9999 a later release's table). Run that version or a newer one; downgrades are not supported.\n",
      code: 78,
    });
    const cli = await runCliProcess(['list-users'], server.dataDir);
    expect(cli.code).toBe(2);
    expect(cli.stderr).toContain('written by a newer version');
    const db = await openDatabase(file, { readers: 1 });
    try {
      expect((await db.query<{ n: number }>('SELECT count(*)::INTEGER AS n FROM schema_migrations'))[0]?.n).toBe(before);
    } finally {
      await db.close();
    }
  }, 60_000);
});
