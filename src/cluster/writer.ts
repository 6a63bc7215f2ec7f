import { AppError } from '../errors';
import { uuidv7FromSeed } from '../ids';
import type { Logger } from '../logger';
import type { LoggedProcessor } from '../pipeline';
import type { ClickHouse } from '../storage/clickhouse/client';
import { insertProcessed } from '../storage/clickhouse/events-table';
import type { IntakeContext } from '../storage/events';
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
  /**
   * Processed rows are inserted at most this often, every partition's in one INSERT (the entries
   * acknowledged only then): ClickHouse wants about one insert a second per table, of thousands of
   * rows, and a trickle of small requests would otherwise make an insert (and a part to merge) per
   * partition per pass. 0 inserts every pass.
   */
  insertEveryMs?: number;
  /** Processed bytes held after which they are inserted without waiting: bounds the memory. */
  maxHeldBytes?: number;
  /** The clock the insert interval is read from (time injected: tests advance it). */
  now?: () => number;
}

export interface WriterPass {
  /** Entries processed this pass (held, or inserted with the rest). */
  taken: number;
  /** Entries acknowledged this pass (their rows inserted). */
  entries: number;
  rows: number;
  deadLettered: number;
  partitions: number[];
}

const DEFAULTS = { leaseMs: 15_000, batchEntries: 500, maxFailures: 3, insertEveryMs: 1_000, maxHeldBytes: 32 * 1024 * 1024, now: Date.now };

/** A partition's entries processed but not inserted yet (nor acknowledged: a death processes them again). */
interface Held {
  parts: Uint8Array[];
  bytes: number;
  rows: number;
  ids: string[];
}
/** The dead letter's reason for an entry that writers died processing. */
export const DIED = 'a writer process died while processing it (out of memory, a crash of the runtime?): not processed again';

export function createWriter(options: WriterOptions) {
  const o = { ...DEFAULTS, ...options };
  /** The partitions whose leases this writer holds. */
  let leased = new Set<number>();
  /** Processed rows not inserted yet, by partition. */
  const held = new Map<number, Held>();
  /** When the oldest rows held were processed (read only while `held` has any). */
  let heldSince = 0;

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

  /**
   * One batch of a partition, in order, up to its first entry that fails (which stays for the
   * next pass); its rows held. True when it stopped at such an entry.
   */
  async function batch(partition: number, pass: WriterPass): Promise<boolean> {
    const entries = await o.log.read(o.consumer, partition, o.batchEntries, held.get(partition)?.ids.at(-1));
    // Entries read again may include one a writer died processing: its mark counts as a failure.
    const died = entries[0]?.redelivered ? await o.log.crashed(o.consumer, partition) : null;
    let marked = false;
    const unmark = async () => {
      if (marked) await o.log.processing(o.consumer, partition, null);
      marked = false;
    };
    const done: string[] = [];
    const parts: Uint8Array[] = [];
    let rows = 0;
    let stopped = false;
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
        const made = await rowsOf(entry);
        parts.push(made.lines);
        rows += made.rows;
        done.push(entry.id);
        pass.taken++;
      } catch (error) {
        // Not a death: the mark goes first (another writer would count it), whatever the failure.
        await unmark().catch(() => undefined);
        if ((await failedEntry(entry, error, pass)) === 'stop') {
          stopped = true;
          break;
        }
      }
    }
    // Before the insert: a death from here on is no single entry's doing.
    await unmark();
    if (done.length) {
      if (held.size === 0) heldSince = o.now();
      let h = held.get(partition);
      if (!h) held.set(partition, (h = { parts: [], bytes: 0, rows: 0, ids: [] }));
      for (const p of parts) h.bytes += p.byteLength;
      h.parts.push(...parts);
      h.rows += rows;
      h.ids.push(...done);
    }
    return stopped;
  }

  const heldBytes = () => [...held.values()].reduce((n, h) => n + h.bytes, 0);

  /** Insert every partition's held rows in one INSERT, make the persons durable, then acknowledge the entries. */
  async function insertHeld(pass: WriterPass): Promise<void> {
    const all = [...held];
    const parts = all.flatMap(([, h]) => h.parts);
    // The rows' `seg` in the table: the first held entry's log time (rows inserted again get it again only if held alike; reads collapse on uuid).
    if (parts.length) await insertProcessed(o.ch, Buffer.concat(parts).toString('utf8'), Math.min(...all.map(([, h]) => Number(h.ids[0]!.split('-')[0]))));
    await o.persons.flush();
    for (const [partition, h] of all) {
      await o.log.ack(partition, h.ids);
      held.delete(partition);
      pass.entries += h.ids.length;
      pass.rows += h.rows;
    }
  }

  const due = () => heldBytes() >= o.maxHeldBytes || o.now() - heldSince >= o.insertEveryMs;

  return {
    /** Renew this writer's partitions (taking over those that came free), then one batch of each. */
    async pass(): Promise<WriterPass> {
      const now = new Set(await o.log.lease(o.consumer, o.leaseMs));
      for (const p of now) if (!leased.has(p)) await o.log.takeOver(o.consumer, p);
      leased = now;
      // Rows held for a partition lost meanwhile are not inserted: its next holder processes the entries again.
      for (const p of held.keys()) if (!now.has(p)) held.delete(p);
      const pass: WriterPass = { taken: 0, entries: 0, rows: 0, deadLettered: 0, partitions: [...now] };
      // A batch stopped at a failing entry: what came before it goes now, so the failure holds nothing up.
      let stopped = false;
      for (const p of now) {
        if (await batch(p, pass)) stopped = true;
        if (heldBytes() >= o.maxHeldBytes) await insertHeld(pass);
      }
      if (held.size && (stopped || due())) await insertHeld(pass);
      return pass;
    },

    /** Insert what is held, then give the partitions up (a clean stop): another writer takes them at once. */
    async release(): Promise<void> {
      const pass: WriterPass = { taken: 0, entries: 0, rows: 0, deadLettered: 0, partitions: [...leased] };
      // Not inserted: left unacknowledged, the next holder processes them again.
      if (held.size) await insertHeld(pass).catch((error: unknown) => o.logger.warn('held rows not inserted at release; the entries stay in the log', { error }));
      held.clear();
      for (const p of leased) await o.log.release(o.consumer, p);
      leased = new Set();
    },
  };
}

/** A failure of something the writer depends on, not of the entry it was processing. */
export function isDependencyFailure(error: unknown): boolean {
  if (error instanceof AppError) return error.kind === 'unavailable' || error.kind === 'query_timeout';
  // The client's own errors too: not every PostgreSQL call goes through the translating client (listeners, migrations).
  return error instanceof MetaStoreUnreachableError || isPgUnavailable(error);
}
