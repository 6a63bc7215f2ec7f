import type { Config } from './config';
import type { IngestRequest, PreparedIngest } from './core/ingest/prepare-ingest';
import type { Logger } from './logger';
import type { PreparedRows } from './pipeline';
import type { IntakeContext } from './storage/events/wal-format';
import type { Storage } from './storage';

/** What every module is built from; tests pass their own (temp data dir, small buffers). */
export interface Deps {
  config: Config;
  storage: Storage;
  logger: Logger;
  version: string;
  /** The clock, so tests can move time. */
  now: () => Date;
  /** Decodes and parses large capture bodies in worker threads (`src/workers/`); absent: the main thread does. */
  ingestParser?: IngestParser;
}

export interface IngestParser {
  /**
   * `prepareIngest` in another thread: the body is moved there and back, the parsed events stay
   * there; with `keep`, under the returned `ticket` until `rows` or `release` is called for it.
   */
  prepare(req: IngestRequest, keep?: boolean): Promise<PreparedIngest>;
  /** The rows of a kept request (`prepareRows` in its thread), once its project is known. */
  rows(ticket: number, context: IntakeContext): Promise<PreparedRows>;
  /** Forget a kept request's events (refused, or nothing to log). */
  release(ticket: number): void;
  /** The rows of a body parsed on this thread (parsed there again: cheaper than moving its objects). */
  prepareBody(context: IntakeContext, body: string | Uint8Array): Promise<PreparedRows>;
}
