import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeClickHouseHome } from '../../src/cli/cluster/engines';
import { chdbPath } from './chdb';
import { processWide, namesOfThisFile } from './process-wide';
import { freePort, launchWatched } from './watchdog';

/**
 * ClickHouse for the tests, in both shapes the event store must run on:
 * - **18.16**, Debian's `clickhouse-server`: one server for the whole run, started from its binary
 *   with a config written into a temporary directory, on free loopback ports, and killed by its
 *   PID once the test process is gone (`.ci/run` installs the package). Without the binary the
 *   18.16 halves are skipped, saying so.
 * - **modern** (26.x), chDB from npm: in process, one data directory per test process (chDB
 *   allows one per process).
 * Each suite takes a database of its own from either (`clickhouseTargets`).
 */

const SERVER_BIN = '/usr/sbin/clickhouse-server';
export const clickhouseServerAvailable = existsSync(SERVER_BIN);
export const CLICKHOUSE_SKIP_REASON = `${SERVER_BIN} not found (apt-get install clickhouse-server): the ClickHouse 18.16 half of the suites is skipped`;
if (!clickhouseServerAvailable) console.warn(`[tests] ${CLICKHOUSE_SKIP_REASON}`);

let server: Promise<number> | null = null;
/** The process's 18.16 server, started by the first file that asks. */
const serverPort = async () => Number(await processWide('clickhouse-port', async () => String(await startServer())));

/** A new database name, unique in this run. */
export const testDatabaseName = namesOfThisFile('hogbase_test');

/** The run's 18.16 server's `clickhouse://` URL for a new database (created by the store on open). */
export async function clickhouseServerUrl(): Promise<string> {
  const port = await (server ??= serverPort());
  return `clickhouse://default@127.0.0.1:${port}/${testDatabaseName()}`;
}

/** A new, empty database on the run's 18.16 server, spoken to over HTTP (tests of the SQL itself). */
export interface ClickHouseServer {
  /** Runs one statement in the database; the body as text, or throws with the server's message. */
  query(sql: string, settings?: Record<string, string>): Promise<string>;
  /** Drops the database (the server runs on for the other tests). */
  stop(): Promise<void>;
}

export async function startClickHouseServer(): Promise<ClickHouseServer> {
  const port = await (server ??= serverPort());
  const database = testDatabaseName();
  const send = async (sql: string, settings: Record<string, string>) => {
    const response = await fetch(`http://127.0.0.1:${port}/?${new URLSearchParams(settings)}`, { method: 'POST', body: sql });
    const text = await response.text();
    if (!response.ok) throw new Error(text.trim());
    return text;
  };
  await send(`CREATE DATABASE ${database}`, {});
  return {
    query: (sql, settings = {}) => send(sql, { database, ...settings }),
    stop: async () => {
      await send(`DROP DATABASE IF EXISTS ${database}`, {});
    },
  };
}

async function startServer(): Promise<number> {
  if (!clickhouseServerAvailable) throw new Error(CLICKHOUSE_SKIP_REASON);
  let lastError = '';
  // A port taken between the probe and the start: try others (bounded).
  for (let attempt = 0; attempt < 3; attempt++) {
    const dir = mkdtempSync(join(tmpdir(), 'hogbase-ch-'));
    const [http, tcp] = [await freePort(), await freePort()];
    // The files `npm run cluster` starts its servers from, standalone.
    writeClickHouseHome(dir, { http, tcp }, []);
    const log = join(dir, 'out.log');
    // Killed outright: a test server's data does not need its ~9 s graceful stop.
    launchWatched({ name: 'clickhouse', dir, argv: [SERVER_BIN, `--config-file=${join(dir, 'config.xml')}`], log, signal: 'KILL' });
    const started = Date.now();
    while (Date.now() - started < 20_000) {
      try {
        const answer = await fetch(`http://127.0.0.1:${http}/?query=SELECT%201`);
        if (answer.ok) return http;
      } catch {
        // not listening yet
      }
      const errors = existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8') : '';
      if (/Address already in use|DB::Exception/.test(errors)) {
        lastError = errors;
        break;
      }
      await Bun.sleep(50);
    }
  }
  throw new Error(`ClickHouse did not start: ${lastError}`);
}

let chdb: Promise<import('@clickhouse/client').ClickHouseClient> | null = null;

/** This process's chDB (modern ClickHouse in process, see chdb.ts) as a `@clickhouse/client` client; never closed. */
export function chdbClient(): Promise<import('@clickhouse/client').ClickHouseClient> {
  chdb ??= (async () => {
    const [{ createClient }, { createChdbConnection }] = await Promise.all([import('@clickhouse/client'), import('chdb/connection')]);
    return createClient({ connection: createChdbConnection({ path: chdbPath() }) } as never);
  })();
  return chdb;
}
