import type { Logger } from '../logger';
import type { RedisLog } from '../storage/log/redis-streams';
import type { WriterPass } from './writer';

/**
 * A writer's passes, one after another until stopped: at once while there is work, after
 * `idleMs` when a pass found none, after `retryMs` when a pass failed (ClickHouse or Redis away:
 * the entries stay in the log, unacknowledged, and are taken again). The partitions' entries all
 * writers are done with are trimmed from Redis now and then (its append-only file only shrinks
 * by what is trimmed), and their consumers of writers long gone are deleted (each writer process
 * is a consumer of its own name, which Redis keeps forever otherwise). Time comes from the caller (`now`, `sleep`), so tests need not wait.
 */
export interface WriterLoopOptions {
  writer: { pass(): Promise<WriterPass>; release(): Promise<void> };
  log: Pick<RedisLog, 'trim' | 'pruneConsumers'>;
  logger: Logger;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
  idleMs?: number;
  retryMs?: number;
  trimEveryMs?: number;
  /** Idle time after which a consumer that owns nothing is deleted. */
  consumerIdleMs?: number;
}

// A consumer idle for several leases is a writer that is gone or holds other partitions; the
// prune is safe for a live one anyway (it owns nothing, and its next read creates it again).
const DEFAULTS = { idleMs: 200, retryMs: 1_000, trimEveryMs: 5_000, consumerIdleMs: 60_000 };

export function createWriterLoop(options: WriterLoopOptions) {
  const o = { ...DEFAULTS, ...options };
  let stopping = false;
  let lastTrim = o.now();

  async function trimHeld(partitions: readonly number[]) {
    if (o.now() - lastTrim < o.trimEveryMs) return;
    lastTrim = o.now();
    for (const p of partitions) {
      await o.log.trim(p);
      await o.log.pruneConsumers(p, o.consumerIdleMs);
    }
  }

  /** One turn: a pass, then the pause it calls for. Resolves to the pass (null when it failed). */
  async function turn(): Promise<WriterPass | null> {
    try {
      const pass = await o.writer.pass();
      await trimHeld(pass.partitions);
      if (pass.taken === 0 && pass.deadLettered === 0) await o.sleep(o.idleMs);
      return pass;
    } catch (error) {
      o.logger.warn('a writer pass failed; its entries stay in the log and are taken again', { error });
      await o.sleep(o.retryMs);
      return null;
    }
  }

  return {
    turn,
    /** Turns until `stop`, then the partitions are given up (another writer takes them at once). */
    async run(): Promise<void> {
      while (!stopping) await turn();
      await o.writer.release();
    },
    /** The turn under way finishes (its batch inserted and acknowledged), then `run` ends. */
    stop() {
      stopping = true;
    },
  };
}
