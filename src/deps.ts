import type { Config } from './config';
import type { IngestRequest, PreparedIngest } from './core/ingest/prepare-ingest';
import type { Logger } from './logger';
import type { AppMetrics } from './metrics';
import type { PreparedRows } from './pipeline';
import type { IntakeContext } from './storage/events';
import type { Storage } from './storage';

/** What every module is built from; tests pass their own (temp data dir, small buffers). */
export interface Deps {
  config: Config;
  storage: Storage;
  logger: Logger;
  version: string;
  /** Requests, acknowledged events and query durations, for `GET /metrics`. */
  metrics: AppMetrics;
  /** The clock, so tests can move time. */
  now: () => Date;
  /**
   * Rows an events export's slice aims at, and its first slice's (export-plan.ts); absent: the
   * defaults. A sizing of the code, not an operator's setting: tests make slices of a few rows.
   */
  exportSlices?: { rows: number; firstRows?: number };
  /**
   * Capture bodies in hand at once, in bytes, and how long a request waits for room
   * (capture/body-budget.ts); absent: the defaults. A sizing of the code, not an operator's
   * setting: tests make it small.
   */
  captureBodies?: { bytes: number; waitMs: number };
  /**
   * Whether the process's memory is tight now (the memory guard found it past `tightFor` its
   * DuckDB cap lately, src/memory-guard.ts): an export then cuts a large slice it is about to
   * read into smaller ones (export-plan.ts `slicesAsRead`). Absent: never.
   */
  memoryTight?: () => boolean;
  /** Decodes and parses large capture bodies in worker threads (`src/workers/`); absent: the main thread does. */
  ingestParser?: IngestParser;
}

export interface IngestParser {
  /**
   * `prepareIngest` in another thread, and the rows of its events prepared there at once for a
   * request received at `receivedAt` (`rows`; null without events): the body is moved there and
   * back, the parsed events stay there.
   */
  prepare(req: IngestRequest, receivedAt: number, uuidSeed: string): Promise<PreparedIngest & { rows: PreparedRows | null }>;
  /**
   * Whether the project of this key anonymizes addresses, as its requests show it: the threads
   * prepare the rows of its next bodies accordingly (`PreparedRows.anonymizeIps`), so a body is
   * prepared again (`prepareBody`) only when the setting changed since.
   */
  noteAnonymizing(token: string, anonymizes: boolean): void;
  /** A body's rows prepared there for a known context (again, for a project that anonymizes addresses). */
  prepareBody(context: IntakeContext, body: string | Uint8Array): Promise<PreparedRows>;
}
