import type { Config } from './config';
import type { Logger } from './logger';
import type { Storage } from './storage';

/** What every module is built from; tests pass their own (temp data dir, small buffers). */
export interface Deps {
  config: Config;
  storage: Storage;
  logger: Logger;
  version: string;
  /** The clock, so tests can move time. */
  now: () => Date;
}
