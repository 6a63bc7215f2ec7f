import { AppError } from '../errors';
import { uuidv7FromSeed } from '../ids';
import type { Logger } from '../logger';
import type { LoggedProcessor } from '../pipeline';
import type { ClickHouse } from '../storage/clickhouse/client';
import { insertProcessed } from '../storage/clickhouse/events-table';
import type { IntakeContext } from '../storage/events/wal-format';
import type { LogEntry, RedisLog } from '../storage/log/redis-streams';
import type { PersonStore } from '../storage/persons/types';
import { isPgUnavailable, MetaStoreUnreachableError } from '../storage/postgres/client';

/**
 * A writer of cluster mode: takes logged capture requests from the partitions it holds, processes
 * them (the same pipeline as the embedded server: normalize, persons, definitions), inserts each
 * batch's rows into ClickHouse with one INSERT, makes the persons durable, and only then
 * acknowledges the entries. A writer that dies anywhere in between leaves its entries
 * unacknowledged; the next holder of the partition processes them again, and gets the same rows
 * (event ids from the entry's log id, see `uuidv7FromSeed`), which the events table reads once.
 */
export interface WriterOptions {
  consumer: string;
  log: RedisLog;
  ch: ClickHouse;
  persons: Pick<PersonStore, 'flush'>;
  process: LoggedProcessor;
  logger: Logger;
  /** How long a partition stays this writer's without a renewal (its death frees it after this). */
  leaseMs?: number;
  /** Entries a batch takes from one partition. */
  batchEntries?: number;
  /**
   * Failures of an entry's own processing after which it goes to the dead letters: errors it
   * raised, and deaths of a writer process while it was processed (see `RedisLog.crashed`).
   */
  maxFailures?: number;
}

export interface WriterPass {
  entries: number;
  rows: number;
  deadLettered: number;
  partitions: number[];
}

const DEFAULTS = { leaseMs: 15_000, batchEntries: 500, maxFailures: 3 };
/** The dead letter's reason for an entry that writers died processing. */
export const DIED = 'a writer process died while processing it (out of memory, a crash of the runtime?): not processed again';

export function createWriter(options: WriterOptions) {
  const o = { ...DEFAULTS, ...options };
  let held = new Set<number>();

  /** One entry's rows (lines as the event store logs them), its events named from its log id. */
  async function rowsOf(entry: LogEntry): Promise<{ lines: Uint8Array; rows: number }> {
    const context = JSON.parse(entry.context) as IntakeContext;
    let n = 0;
    const encoded = await o.process(context, entry.body, () => uuidv7FromSeed(context.receivedAt, `${entry.partition}/${entry.id}/${n++}`));
    return { lines: encoded.lines, rows: encoded.rows };
  }

  /** Out of the way of the entries behind it, kept for the operator. */
  async function moveAside(entry: LogEntry, reason: string, failures: number, pass: WriterPass) {
    await o.log.deadLetter(entry, reason);
    pass.deadLettered++;
    o.logger.error('a logged request keeps failing: moved to the dead letters', { partition: entry.partition, id: entry.id, failures, deliveries: entry.deliveries, reason });
  }

  /**
   * An entry's own processing failed: counted, and moved aside once it failed too often ('skip':
   * the batch goes on past it), else left for the next pass ('stop'). Rethrown when what failed
   * is a dependency: PostgreSQL away (persons loaded for a project) is no fault of the entry, the
   * pass fails and the entry is tried again, however long the outage lasts.
   */
  async function failedEntry(entry: LogEntry, error: unknown, pass: WriterPass): Promise<'skip' | 'stop'> {
    if (isDependencyFailure(error)) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    const failures = await o.log.failed(entry.partition, entry.id);
    if (failures >= o.maxFailures) {
      await moveAside(entry, reason, failures, pass);
      return 'skip';
    }
    o.logger.warn('a logged request failed; it is tried again', { partition: entry.partition, id: entry.id, failures, deliveries: entry.deliveries, reason });
    return 'stop';
  }

  /** One batch of a partition, in order, up to its first entry that fails (which stays for the next pass). */
  async function batch(partition: number, pass: WriterPass): Promise<void> {
    const entries = await o.log.read(o.consumer, partition, o.batchEntries);
    // Entries read again may include one a writer died processing: its mark counts as a failure.
    const died = entries[0]?.redelivered ? await o.log.crashed(o.consumer, partition) : null;
    let marked = false;
    const unmark = async () => {
      if (marked) await o.log.processing(o.consumer, partition, null);
      marked = false;
    };
    const done: string[] = [];
    const parts: Uint8Array[] = [];
    for (const entry of entries) {
      if (died?.id === entry.id && died.failures >= o.maxFailures) {
        await moveAside(entry, `${DIED} (${died.failures} failures, the last a death of the writer process)`, died.failures, pass);
        continue;
      }
      // Only entries read again: a first reading costs no round trip, and an entry that kills the
      // writer is read again (and marked) after its first death.
      if (entry.redelivered) await o.log.processing(o.consumer, partition, entry.id);
      marked = entry.redelivered === true;
      try {
        const { lines, rows } = await rowsOf(entry);
        parts.push(lines);
        pass.rows += rows;
        done.push(entry.id);
      } catch (error) {
        // Not a death: the mark goes first (another writer would count it), whatever the failure.
        await unmark().catch(() => undefined);
        if ((await failedEntry(entry, error, pass)) === 'stop') break;
      }
    }
    // Before the insert: a death from here on is no single entry's doing.
    await unmark();
    if (parts.length) await insertProcessed(o.ch, Buffer.concat(parts).toString('utf8'), Number(entries[0]!.id.split('-')[0]));
    await o.persons.flush();
    await o.log.ack(partition, done);
    pass.entries += done.length;
  }

  return {
    /** Renew this writer's partitions (taking over those that came free), then one batch of each. */
    async pass(): Promise<WriterPass> {
      const now = new Set(await o.log.lease(o.consumer, o.leaseMs));
      for (const p of now) if (!held.has(p)) await o.log.takeOver(o.consumer, p);
      held = now;
      const pass: WriterPass = { entries: 0, rows: 0, deadLettered: 0, partitions: [...now] };
      for (const p of now) await batch(p, pass);
      return pass;
    },

    /** Give the partitions up (a clean stop): another writer takes them at once. */
    async release(): Promise<void> {
      for (const p of held) await o.log.release(o.consumer, p);
      held = new Set();
    },
  };
}

/** A failure of something the writer depends on, not of the entry it was processing. */
export function isDependencyFailure(error: unknown): boolean {
  if (error instanceof AppError) return error.kind === 'unavailable' || error.kind === 'query_timeout';
  // The client's own errors too: not every PostgreSQL call goes through the translating client (listeners, migrations).
  return error instanceof MetaStoreUnreachableError || isPgUnavailable(error);
}
