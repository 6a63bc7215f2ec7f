import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisClient } from 'bun';
import { freePort, launchWatched } from './watchdog';

/**
 * Redis servers for the tests, from Debian's `redis-server` binary (`.ci/run` installs it), with
 * the durability cluster mode asks of it (append-only file, fsync on every write), on a free
 * loopback port in a temporary directory, killed by PID once the test process is gone. Without
 * the binary the Redis suites are skipped, saying so.
 */
const BIN = '/usr/bin/redis-server';
export const redisAvailable = existsSync(BIN);
export const REDIS_SKIP_REASON = `${BIN} not found (apt-get install redis-server): the Redis suites are skipped`;
if (!redisAvailable) console.warn(`[tests] ${REDIS_SKIP_REASON}`);

export interface TestRedis {
  url: string;
  dir: string;
  port: number;
}

/** Start a server on `dir` (a new directory unless given: a restart on the same files); `durable` false: without its append-only file. */
export async function startRedis(dir = mkdtempSync(join(tmpdir(), 'hogbase-redis-')), port?: number, durable = true): Promise<TestRedis> {
  if (!redisAvailable) throw new Error(REDIS_SKIP_REASON);
  for (let attempt = 0; attempt < 3; attempt++) {
    const p = port ?? (await freePort());
    launchWatched({
      name: 'redis',
      dir,
      argv: [BIN, '--bind', '127.0.0.1', '--port', String(p), '--dir', dir, '--appendonly', durable ? 'yes' : 'no', '--appendfsync', durable ? 'always' : 'everysec', '--save', '', '--pidfile', join(dir, `redis-${p}.pid`)],
      log: join(dir, 'server.log'),
      signal: 'KILL',
    });
    const url = `redis://127.0.0.1:${p}`;
    const started = Date.now();
    while (Date.now() - started < 10_000) {
      const probe = new RedisClient(url, { autoReconnect: false, connectionTimeout: 500 });
      try {
        if ((await probe.send('PING', [])) === 'PONG') return { url, dir, port: p };
      } catch {
        // not listening yet
      } finally {
        probe.close();
      }
      await Bun.sleep(25);
    }
  }
  throw new Error('Redis did not start');
}

/** Kill a test server outright (SIGKILL, as a crash); its files are removed unless kept for a restart. */
export async function killRedis(redis: TestRedis, keepFiles = false): Promise<void> {
  const pid = Number(await Bun.file(join(redis.dir, `redis-${redis.port}.pid`)).text());
  process.kill(pid, 'SIGKILL');
  while (existsSync(`/proc/${pid}`)) await Bun.sleep(10);
  if (!keepFiles) rmSync(redis.dir, { recursive: true, force: true });
}
