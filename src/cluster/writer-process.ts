import { hostname } from 'node:os';
import type { Config } from '../config';
import type { Logger } from '../logger';
import { createIntakeProcessor } from '../pipeline';
import { openStorage } from '../storage';
import { openClickHouse, parseClickHouseUrl } from '../storage/clickhouse/client';
import { migrateClickHouse } from '../storage/clickhouse/schema';
import { openEventLog } from '../storage/log/log-intake';
import { createWriter } from './writer';
import { createWriterLoop } from './writer-loop';

/**
 * ROLE=writer: no HTTP server. Persons and definitions are PostgreSQL's (META_STORE, through the
 * same stores as a node's, with a DuckDB copy in DATA_DIR); events go to ClickHouse
 * (EVENTS_STORE); the work comes from the log (EVENT_LOG). SIGTERM or SIGINT: the batch under
 * way is finished and acknowledged, the partitions released, everything closed.
 * Resolves once stopped.
 */
export async function runWriterProcess(config: Config, logger: Logger): Promise<void> {
  const ch = await openClickHouse(parseClickHouseUrl(config.EVENTS_STORE!));
  const closers: Array<() => Promise<void> | void> = [() => ch.close()];
  const closeAll = async () => {
    for (const close of closers.reverse()) await close();
  };
  try {
    await migrateClickHouse(ch);
    // The persons it flushes are copied beside the events, for the nodes' joins.
    const storage = await openStorage({ dataDir: config.DATA_DIR, metaStore: config.META_STORE, memoryLimit: config.DUCKDB_MEMORY_LIMIT, personCopies: false, logger, personsMirror: ch });
    closers.push(() => storage.close());
    const log = await openEventLog(config.EVENT_LOG!);
    closers.push(() => log.close());
    // One consumer name per process: a restarted writer is another consumer, and takes its
    // predecessor's unacknowledged entries like any other's (XAUTOCLAIM).
    const consumer = `${hostname()}-${process.pid}`;
    const writer = createWriter({ consumer, log, ch, persons: storage.persons, process: createIntakeProcessor(storage.persons, storage.seen, undefined, logger).logged, logger });
    const loop = createWriterLoop({ writer, log, logger, now: Date.now, sleep: (ms) => Bun.sleep(ms) });
    const stop = (signal: string) => {
      logger.info('writer stopping', { signal });
      loop.stop();
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
    logger.info('writer started', { consumer, clickhouse: ch.version });
    console.log(`Writing as ${consumer}`);
    await loop.run();
  } finally {
    await closeAll();
  }
  logger.info('writer stopped cleanly');
}
