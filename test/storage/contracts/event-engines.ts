import { describe } from 'bun:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStorage, type Storage } from '../../../src/storage';
import { openClickHouse, parseClickHouseUrl, type ClickHouse } from '../../../src/storage/clickhouse/client';
import { migrateClickHouse } from '../../../src/storage/clickhouse/schema';
import { CLICKHOUSE_SKIP_REASON, chdbClient, clickhouseServerAvailable, clickhouseServerUrl, testDatabaseName } from '../../helpers/clickhouse';

/**
 * The engines the event-store contract runs against, each opened as `openStorage` opens it for a
 * server: embedded DuckDB (log → hot table and Parquet), and an embedded server with
 * EVENTS_STORE (the same log, loaded by the ClickHouse sink into its `events` table) on chDB
 * (modern ClickHouse, in process) and on Debian's 18.16 server.
 */
export interface EventEngine {
  name: 'duckdb' | 'clickhouse-chdb' | 'clickhouse-18.16';
  /** Why this engine's half is skipped here, or null. */
  skip: string | null;
  open(): Promise<OpenedEvents>;
}

export interface OpenedEvents {
  storage: Storage;
  /** The dead letters are kept in the data dir whatever the engine. */
  dataDir: string;
  close(): Promise<void>;
}

/** Small buffers and no background compaction: a load follows an append within ~50 ms, and a test decides when files merge. */
const STORE_TUNING = { bufferMaxAgeMs: 50, autoCompact: false, purgeGraceMs: 0, flushRetryMs: 5, maxFlushAttempts: 2 };

async function openWith(openEvents: (() => Promise<ClickHouse>) | null): Promise<OpenedEvents> {
  const dataDir = await mkdtemp(join(tmpdir(), 'events-contract-'));
  let ch: ClickHouse | null = null;
  if (openEvents) {
    ch = await openEvents();
    await migrateClickHouse(ch);
  }
  const storage = await openStorage({ dataDir, eventStore: STORE_TUNING, personCopies: false, ...(ch ? { eventsStore: ch } : {}) });
  return {
    storage,
    dataDir,
    async close() {
      await storage.close();
      await ch?.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export const EVENT_ENGINES: EventEngine[] = [
  { name: 'duckdb', skip: null, open: () => openWith(null) },
  { name: 'clickhouse-chdb', skip: null, open: () => openWith(async () => openClickHouse({ client: await chdbClient(), database: testDatabaseName() })) },
  {
    name: 'clickhouse-18.16',
    skip: clickhouseServerAvailable ? null : CLICKHOUSE_SKIP_REASON,
    open: () => openWith(async () => openClickHouse(parseClickHouseUrl(await clickhouseServerUrl()))),
  },
];

/** One `describe` per engine running `body`; an engine without its binary is skipped, with the reason. */
export function forEachEventEngine(title: string, body: (engine: EventEngine) => void) {
  for (const engine of EVENT_ENGINES) {
    const name = `${title} [${engine.name}]`;
    if (engine.skip) describe.skip(`${name} (skipped: ${engine.skip})`, () => body(engine));
    else describe(name, () => body(engine));
  }
}
