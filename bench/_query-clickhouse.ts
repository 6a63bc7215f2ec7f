import { createApp } from '../src/app';
import { bootstrap } from '../src/bootstrap';
import { loadConfig, type Config } from '../src/config';
import { hotValuesOf, type StoredEventRow } from '../src/core/events/columns';
import type { Deps } from '../src/deps';
import { silentLogger } from '../src/logger';
import { createAppMetrics } from '../src/metrics';
import { withPipeline } from '../src/pipeline';
import { openStorage, type Storage, type StorageOptions } from '../src/storage';
import { openClickHouse, type ClickHouse } from '../src/storage/clickhouse/client';
import { insertProcessed } from '../src/storage/clickhouse/events-table';
import { migrateClickHouse } from '../src/storage/clickhouse/schema';
import { encodePlacedLines } from '../src/storage/events/log/row-lines';
import { TEST_KEYS } from '../test/helpers/server-process';

/**
 * What the query bench's two ClickHouse phases share: the loaded events copied out of DuckDB into
 * a ClickHouse database, and an app answered in process (no socket) for the phase on chDB, which
 * the server cannot use as EVENTS_STORE.
 */

/** Insert size of the copy: ClickHouse wants few, large inserts. */
const COPY_BATCH = 50_000;

/**
 * Every project's events (both of the bench's) from the DuckDB store in `dataDir` into `ch`'s
 * events table, as the cluster's writer inserts processed log lines. The store is opened here and
 * closed again: the database file takes one process at a time.
 */
export async function copyEventsInto(ch: ClickHouse, storeOptions: StorageOptions): Promise<{ copied: number; seconds: number }> {
  await migrateClickHouse(ch);
  const storage = await openStorage(withPipeline(storeOptions));
  let copied = 0;
  const started = performance.now();
  try {
    for (const team of (await storage.management.listAllProjects()).map((p) => p.id)) {
      const rel = await storage.events.eventsRelation(team);
      const stream = storage.events.streamQuery(
        `SELECT uuid, team_id, event, distinct_id, person_id, CAST(properties AS VARCHAR) AS properties, epoch_ms(timestamp) AS ts, epoch_ms(created_at) AS created, elements_chain FROM ${rel.sql} AS e`,
        rel.params,
      );
      let batch: StoredEventRow[] = [];
      const flush = async () => {
        if (batch.length) await insertProcessed(ch, encodePlacedLines(batch).toString('utf8'), 1);
        copied += batch.length;
        batch = [];
      };
      for await (const chunk of stream) {
        for (const r of chunk) {
          const properties = String(r.properties);
          batch.push({
            uuid: String(r.uuid), teamId: Number(r.team_id), event: String(r.event), distinctId: String(r.distinct_id), personId: r.person_id === null ? null : String(r.person_id),
            properties, timestamp: Number(r.ts), createdAt: Number(r.created), elementsChain: String(r.elements_chain ?? ''), hot: hotValuesOf(JSON.parse(properties)),
          });
          if (batch.length >= COPY_BATCH) await flush();
        }
      }
      await flush();
    }
  } finally {
    await storage.close();
  }
  return { copied, seconds: (performance.now() - started) / 1000 };
}

/** chDB (modern ClickHouse in this process) over a data directory of its own; one per process. */
export async function openChdb(dir: string): Promise<{ ch: ClickHouse; close(): Promise<void> }> {
  const [{ createClient }, { createChdbConnection }] = await Promise.all([import('@clickhouse/client'), import('chdb/connection')]);
  const client = createClient({ connection: createChdbConnection({ path: dir }) } as never);
  const ch = await openClickHouse({ client, database: 'bench' });
  return { ch, close: () => client.close() };
}

/** A GET of the events API answered in process: its status once the body is read whole. */
export type InProcessGet = (path: string) => Promise<{ status: number; body: string }>;

/** An app over `storage` with the bench's keys, asked through `app.handle` (no HTTP, no loopback). */
export function inProcessGet(storage: Storage, config: Config): InProcessGet {
  const deps: Deps = { config, storage, logger: silentLogger, version: 'bench', now: () => new Date(), metrics: createAppMetrics() };
  const app = createApp(deps);
  return async (path) => {
    const res = await app.handle(new Request(`http://bench.local${path}`, { headers: { authorization: `Bearer ${TEST_KEYS.personal}` } }));
    return { status: res.status, body: await res.text() };
  };
}

/**
 * An app whose events are in `ch` (`eventsStore`, as a server with EVENTS_STORE keeps them), on a
 * new DATA_DIR bootstrapped with the bench's keys: its first project is the measured one.
 */
export async function openClickHouseApp(ch: ClickHouse, dataDir: string, env: Record<string, string>, personCopies: boolean) {
  const config = loadConfig({
    ...env,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    BOOTSTRAP_EMAIL: TEST_KEYS.email,
    BOOTSTRAP_PERSONAL_API_KEY: TEST_KEYS.personal,
    BOOTSTRAP_PROJECT_API_KEY: TEST_KEYS.project,
  });
  const storage = await openStorage(withPipeline({ dataDir, personCopies, eventsStore: ch }));
  const account = await bootstrap(storage, config);
  return { projectId: account?.project.id ?? null, get: inProcessGet(storage, config), close: () => storage.close() };
}
