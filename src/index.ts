import { createApp } from './app';
import { serveControlSocket } from './cli/control-socket';
import { HARD_BODY_LIMIT_BYTES } from './http/body-limit';
import { bootstrap, describeAccount } from './bootstrap';
import { ConfigError, loadConfig, type Config } from './config';
import type { Deps } from './deps';
import { createLogger, type Logger } from './logger';
import { startMemoryGuard, type MemoryGuard } from './memory-guard';
import { createAppMetrics } from './metrics';
import { withPipeline } from './pipeline';
import { portTakenMessage, preflight } from './preflight';
import { runWriterProcess } from './cluster/writer-process';
import { DatabaseLockedError, EventLogUnreachableError, EventsStoreUnreachableError, LogNotDurableError, MetaStoreUnreachableError, NewerDatabaseError, openStorage } from './storage';
import { VERSION } from './version';
import { createIngestParser } from './workers/ingest-parser';
import { keepSpares } from './storage/events/log/line-buffers';

/** Process entry: config → storage → app.listen; SIGTERM/SIGINT → drain, flush, close. */
async function main() {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(78);
    }
    throw error;
  }
  // Before anything is created: a bad HOST or DATA_DIR must not leave a bootstrapped database behind.
  const checked = preflight(config);
  if (checked.problems.length) {
    console.error(checked.problems.map((p) => `Invalid configuration: ${p}`).join('\n'));
    process.exit(78);
  }
  if (checked.portTaken) {
    console.error(checked.portTaken);
    process.exit(EXIT_IN_USE);
  }
  const logger = createLogger(config.LOG_LEVEL);
  warnSmallThreadPool(logger, config.UV_THREADPOOL_SIZE);
  if (config.ROLE === 'writer') return runWriter(config, logger);
  // Before storage: recovery prepares the logged requests' rows in these threads too. Not on a
  // node: its requests are logged as received, and the writers prepare their rows.
  const ingestParser = config.INGEST_PARSE_THREADS > 0 && config.ROLE !== 'node' ? createIngestParser(config.INGEST_PARSE_THREADS, config.MAX_BODY_BYTES, logger) : undefined;
  let storage;
  try {
    storage = await openStorage(
      withPipeline(
        {
          dataDir: config.DATA_DIR,
          metaStore: config.META_STORE,
          eventLog: config.ROLE === 'node' ? config.EVENT_LOG : undefined,
          eventsStoreUrl: config.EVENTS_STORE,
          durability: config.DURABILITY,
          memoryLimit: config.DUCKDB_MEMORY_LIMIT,
          personCopies: config.PERSON_COPIES === 'on',
          defaultRetentionDays: config.EVENTS_RETENTION_DAYS,
          logger,
          // The request thread and the parser threads: what a saturating ingestion keeps busy beside DuckDB.
          eventStore: { minFreeDiskBytes: config.MIN_FREE_DISK_MB * 1024 * 1024, maxBacklogSeconds: config.MAX_BACKLOG_SECONDS, busyThreads: 1 + (ingestParser ? config.INGEST_PARSE_THREADS : 0) },
        },
        ingestParser,
      ),
    );
  } catch (error) {
    if (error instanceof DatabaseLockedError) {
      console.error(error.message);
      process.exit(EXIT_IN_USE);
    }
    if (error instanceof NewerDatabaseError) {
      console.error(error.message);
      process.exit(78);
    }
    if (error instanceof LogNotDurableError) {
      console.error(error.message);
      process.exit(78);
    }
    if (error instanceof MetaStoreUnreachableError || error instanceof EventLogUnreachableError || error instanceof EventsStoreUnreachableError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
  // DUCKDB_MEMORY_LIMIT as DuckDB reads it (the memory guard's cap), asked before any signal handler exists.
  const memoryCap = (await storage.memoryUsage()).limitBytes;
  // The memory guard starts once the server listens.
  let guard: MemoryGuard | null = null;
  const deps: Deps = { config, storage, logger, version: VERSION, now: () => new Date(), ingestParser, metrics: createAppMetrics(), memoryTight: () => guard?.tight() ?? false };
  const readiness = { accepting: true };
  const app = createApp(deps, readiness);

  // Before the first await that follows: a SIGTERM sent as soon as 'Listening' is printed ended
  // the process by the default action (exit 143, no checkpoint) when the handlers were installed
  // only after it.
  let stopping = false;
  let stopControl = () => {};
  let stopGuard = () => {};
  // Storage first: closing drains processing, which prepares rows in the parser threads.
  const closeData = async () => {
    await storage.close();
    await ingestParser?.close();
  };
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    readiness.accepting = false;
    logger.info('shutting down', { signal });
    // Requests in flight get DRAIN_MS to finish (a long export would otherwise hold the stop
    // past a supervisor's grace period and end in SIGKILL), then their connections are closed.
    const drained = app.server?.stop(false);
    const cut = setTimeout(() => void app.server?.stop(true), DRAIN_MS);
    try {
      await drained;
      clearTimeout(cut);
      stopControl();
      stopGuard();
      await closeData();
      logger.info('stopped cleanly');
      process.exit(0);
    } catch (error) {
      logger.error('shutdown failed', { error });
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  const created = await bootstrap(storage, config);
  if (created) {
    // Printed once, on the first start only: the personal key is never shown again.
    console.log(`First start: created an organization, a project, a user and keys.\n${JSON.stringify(describeAccount(created), null, 2)}`);
  }
  try {
    app.listen({
      port: config.PORT,
      hostname: config.HOST,
      // Elysia sets SO_REUSEPORT unless told: a second server on the port would share it.
      reusePort: config.REUSE_PORT === 'on',
      // Our own 413 (with the error body) is decided first, from Content-Length or while streaming.
      maxRequestBodySize: Math.max(HARD_BODY_LIMIT_BYTES, config.MAX_BODY_BYTES * 2),
      idleTimeout: 120,
    });
  } catch (error) {
    // Taken between the preflight and now: leave the data as a clean stop would.
    await closeData();
    if ((error as { code?: string }).code !== 'EADDRINUSE') throw error;
    console.error(portTakenMessage(config));
    process.exit(EXIT_IN_USE);
  }
  // The operator CLI's way in while this process holds the database.
  if (!stopping) stopControl = serveControlSocket(config.DATA_DIR, storage, logger);
  if (!stopping) {
    const started = startMemoryGuard(memoryCap, deps.metrics, (past) => {
      keepSpares(!past);
      ingestParser?.notePastTrigger(past);
    });
    guard = started.guard;
    stopGuard = started.stop;
  }
  logger.info('listening', { host: config.HOST, port: app.server?.port, dataDir: config.DATA_DIR, durability: config.DURABILITY, role: config.ROLE ?? 'embedded' });
  console.log(`Listening on http://${config.HOST}:${app.server?.port}`);
}

/** ROLE=writer (src/cluster): no HTTP server; exits once stopped by SIGTERM/SIGINT. */
async function runWriter(config: Config, logger: Logger): Promise<void> {
  try {
    await runWriterProcess(config, logger);
  } catch (error) {
    if (error instanceof DatabaseLockedError) {
      console.error(error.message);
      process.exit(EXIT_IN_USE);
    }
    if (error instanceof LogNotDurableError) {
      console.error(error.message);
      process.exit(78);
    }
    if (error instanceof MetaStoreUnreachableError || error instanceof EventLogUnreachableError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
  process.exit(0);
}

/**
 * Bun runs DuckDB's statements and file I/O (the log's fdatasync: the 200) on one thread pool,
 * as many threads as cores unless UV_THREADPOOL_SIZE says otherwise, read once at start. With
 * two cores, two long statements (a load, a query) held every thread and a capture request's
 * fsync waited seconds behind them. `npm start` sets 16; started another way, say so.
 */
function warnSmallThreadPool(logger: Logger, size: number | undefined): void {
  if ((size ?? 0) >= MIN_THREAD_POOL) return;
  logger.warn('UV_THREADPOOL_SIZE is unset or small: database work can delay acknowledgements; start with npm start, or set it to 16', { UV_THREADPOOL_SIZE: size ?? null });
}

/** DuckDB's connections (1 writer + 4 readers), the log's writes and syncs, and headroom. */
const MIN_THREAD_POOL = 8;
/** sysexits EX_TEMPFAIL: another process holds what this one needs (the port, the database). */
const EXIT_IN_USE = 75;
/** How long requests in flight may take to finish after SIGTERM before their connections are closed. */
const DRAIN_MS = 10_000;

await main();
