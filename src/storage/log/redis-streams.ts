import { RedisClient } from 'bun';
import { AppError } from '../../errors';

/**
 * The durable log between capture nodes and writers in cluster mode, on Redis Streams (Redis
 * with `appendfsync always`: XADD answers once the entry is fsynced, so a node's 200 after it
 * keeps the promise a 200 makes). Kafka or Redpanda would sit behind this same interface in
 * production; neither installs here.
 *
 * - **Partitions**: one stream per partition; an event goes to the partition of its project and
 *   distinct id (`partitionOf`; a request naming several partitions' ids is split, see
 *   log-intake.ts), so one distinct id's events are in one stream, in order.
 * - **Ownership**: a writer processes a partition only while it holds the partition's lease (a key
 *   with a time to live, renewed while it works). A crashed writer's leases run out; the writer
 *   that takes a partition next claims the entries the old one had read but not acknowledged
 *   (XAUTOCLAIM) and processes them first, so a partition is processed by one writer at a time,
 *   in order.
 * - **Dead letters**: an entry that keeps failing is moved to a dead-letter stream (and
 *   acknowledged), where the CLI lists and replays it. "Keeps failing" counts the failures of the
 *   entry itself (`failed`), not Redis's delivery count: that one also grows with every pass that
 *   failed for another reason (ClickHouse away, an entry before it failing: every re-read of the
 *   pending entries counts a delivery, about one a second through an outage), and would send
 *   healthy entries to the dead letters after a long enough outage, whatever the bound.
 *   A writer that *dies* processing an entry (out of memory, a crash of the runtime) counts
 *   nothing by itself, so an entry read again is marked while it is processed (`processing`):
 *   a mark left by another consumer is a death during that entry, counted as one of its
 *   failures (`crashed`). A mark of this consumer's own is not (it is alive), and a pass that
 *   fails for another reason clears its mark first.
 * - **Consumers**: every writer process is a consumer of its own name, which Redis keeps after the
 *   process is gone; the holder of a partition deletes the idle ones that own nothing (`pruneConsumers`).
 * Payloads are text (the request's context and decoded body): replies from Bun's client are strings.
 */

/** One logged capture request. */
export interface LogRecord {
  /** The request's context (project, receive time, address, …) as JSON text. */
  context: string;
  /** The decoded body, as received. */
  body: string;
  /** Events in it. */
  events: number;
}

export interface LogEntry extends LogRecord {
  partition: number;
  id: string;
  /** Times it was handed to a writer (1 the first time). */
  deliveries: number;
  /** Read again from the pending entries (after a failed pass, or taken over from a writer that is gone). */
  redelivered?: boolean;
}

export interface DeadLetterEntry extends LogEntry {
  /** Its id in the dead-letter stream. */
  deadId: string;
  reason: string;
}

export interface RedisLogOptions {
  /** redis://HOST:PORT[/DB] */
  url: string;
  /** Key prefix of every stream and lease (several deployments may share one Redis). */
  prefix?: string;
  partitions: number;
}

const GROUP = 'writers';

/**
 * Partitions of a deployment's log. Fixed, not a setting: nodes and writers must agree on it, and
 * changing it would move people to other partitions while their older entries wait in the old
 * ones (out of order). 16 lets up to 16 writers share the work.
 */
export const LOG_PARTITIONS = 16;
const CONNECT_TIMEOUT_MS = 2000;
const ACK_CHUNK = 1000;
/** Consumers one prune deletes at most: it runs inside Redis, which does nothing else meanwhile. */
const PRUNE_LIMIT = 100;

/** FNV-1a over the project and distinct id: the same person always lands in the same partition. */
export function partitionOf(teamId: number, distinctId: string, partitions: number): number {
  let h = 0x811c9dc5;
  const key = `${teamId}\u0000${distinctId}`;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % partitions;
}

/** Renew a lease only while it is still ours. */
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end`;
/**
 * Acknowledge, and forget the entries' failures. One script: a failure count must not outlive its
 * entry (a later entry never reuses the id, but the hash would only grow).
 */
const ACK = `redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 2)) if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('HDEL', KEYS[2], unpack(ARGV, 2)) end return 1`;
/**
 * Delete a partition's consumers that are idle, own no pending entry and do not hold its lease, at
 * most ARGV[3] of them. Atomic, so no consumer can take entries between the check and the delete
 * (XGROUP DELCONSUMER drops the pending entries it owns: they would never be delivered again). A
 * live writer deleted here is created again by its next read.
 */
const PRUNE = `local holder = redis.call('GET', KEYS[2])
local removed = 0
for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  local info = {}
  for i = 1, #c, 2 do info[c[i]] = c[i + 1] end
  if removed >= tonumber(ARGV[3]) then break end
  if tonumber(info['pending']) == 0 and tonumber(info['idle']) >= tonumber(ARGV[2]) and info['name'] ~= holder then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], info['name'])
    removed = removed + 1
  end
end
return removed`;
/**
 * The mark a writer left on the entry it was processing, if another consumer left it: that one
 * died there (a live writer clears its mark after the entry). Counted as one failure of the
 * entry; the mark is dropped either way. Replies [id, failures] or nil.
 */
const CRASHED = `local mark = redis.call('GET', KEYS[1])
if not mark then return false end
redis.call('DEL', KEYS[1])
local id, consumer = string.match(mark, '^(%S+) (.*)$')
if not id or consumer == ARGV[1] then return false end
return {id, redis.call('HINCRBY', KEYS[2], id, 1)}`;
/** Records sharing one context, one per stream named, appended in one script (`appendAll`); their ids. */
const APPEND_ALL = `local ids = {} for i = 1, #KEYS do ids[i] = redis.call('XADD', KEYS[i], '*', 'context', ARGV[1], 'body', ARGV[2 * i], 'events', ARGV[2 * i + 1]) end return ids`;
/** Drop a lease only while it is still ours. */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;

type Fields = string[];
type StreamEntry = [string, Fields];

const field = (fields: Fields, name: string): string => {
  for (let i = 0; i < fields.length; i += 2) if (fields[i] === name) return fields[i + 1] ?? '';
  return '';
};

export interface RedisLog {
  readonly partitions: number;
  /** Log a request in its partition; resolves once Redis has it (fsynced with `appendfsync always`). */
  append(partition: number, record: LogRecord): Promise<string>;
  /**
   * Records of one request in several partitions, sharing a context, appended all or none: one
   * script, which Redis runs alone and writes to its append-only file as one transaction (fsynced
   * before the answer); their ids in order.
   */
  appendAll(context: string, parts: ReadonlyArray<{ partition: number; body: string; events: number }>): Promise<string[]>;
  /** Take or renew the leases this writer can hold now; the partitions it holds. */
  lease(consumer: string, leaseMs: number): Promise<number[]>;
  release(consumer: string, partition: number): Promise<void>;
  /** Entries the partition's previous holder read and did not acknowledge, now this writer's (in log order). */
  takeOver(consumer: string, partition: number): Promise<number>;
  /**
   * The partition's next entries for this writer: its unacknowledged ones first, then new ones.
   * `after`: the last entry it holds processed (unacknowledged, to be inserted): only its
   * unacknowledged entries after that one are read again.
   */
  read(consumer: string, partition: number, count: number, after?: string): Promise<LogEntry[]>;
  ack(partition: number, ids: readonly string[]): Promise<void>;
  /** Note one failure of the entry's own processing; its failures so far (forgotten once acknowledged). */
  failed(partition: number, id: string): Promise<number>;
  /** Mark the entry this consumer processes now in the partition (null: none). */
  processing(consumer: string, partition: number, id: string | null): Promise<void>;
  /** The entry a consumer other than this one died processing (its mark), counted as a failure: its id and failures so far. */
  crashed(consumer: string, partition: number): Promise<{ id: string; failures: number } | null>;
  /** Delete up to `limit` consumers of the partition idle for `minIdleMs` that own nothing; how many. */
  pruneConsumers(partition: number, minIdleMs: number, limit?: number): Promise<number>;
  /** Move an entry that keeps failing to the dead-letter stream (it stops blocking its partition). */
  deadLetter(entry: LogEntry, reason: string): Promise<void>;
  listDeadLetters(): Promise<DeadLetterEntry[]>;
  /** Log dead letters (all, or those ids) again in their partitions; how many. */
  replayDeadLetters(deadIds?: readonly string[]): Promise<number>;
  /** Drop a partition's entries every writer is done with. */
  trim(partition: number): Promise<void>;
  close(): void;
}

export async function openRedisLog(options: RedisLogOptions): Promise<RedisLog> {
  if (!Number.isSafeInteger(options.partitions) || options.partitions < 1) throw new AppError('invalid_input', 'The log needs at least one partition.');
  const prefix = options.prefix ?? 'hogbase';
  // Reconnects by itself, a few times: beyond that, appends fail (503) instead of queueing.
  const connect = () => new RedisClient(options.url, { autoReconnect: true, maxRetries: 3, connectionTimeout: CONNECT_TIMEOUT_MS });
  let client = connect();
  let closed = false;
  const send = async <T>(command: string, args: string[]): Promise<T> => {
    const used = client;
    try {
      return (await used.send(command, args)) as T;
    } catch (error) {
      // Bun's client gives up for good once its retries are spent ("Connection has failed" ever
      // after): a Redis restarted later would never be used again. The next command gets a new one.
      if (!used.connected && used === client && !closed) {
        used.close();
        client = connect();
      }
      throw translateRedisError(error);
    }
  };
  await checkDurable(send);
  const stream = (p: number) => `${prefix}:log:${p}`;
  const leaseKey = (p: number) => `${prefix}:lease:${p}`;
  const failures = (p: number) => `${prefix}:failures:${p}`;
  const mark = (p: number) => `${prefix}:processing:${p}`;
  const dead = `${prefix}:dead`;
  for (let p = 0; p < options.partitions; p++) {
    await send('XGROUP', ['CREATE', stream(p), GROUP, '0', 'MKSTREAM']).catch((error) => {
      if (!String((error as AppError).cause ?? error).includes('BUSYGROUP')) throw error;
    });
  }
  const deliveries = async (p: number, ids: readonly string[]): Promise<Map<string, number>> => {
    if (!ids.length) return new Map();
    const rows = await send<Array<[string, string, number, number]>>('XPENDING', [stream(p), GROUP, ids[0]!, ids[ids.length - 1]!, String(ids.length)]);
    return new Map(rows.map(([id, , , count]) => [id, Number(count)]));
  };
  const toEntry = (p: number, [id, fields]: StreamEntry, count: number, redelivered: boolean): LogEntry => ({
    partition: p,
    id,
    context: field(fields, 'context'),
    body: field(fields, 'body'),
    events: Number(field(fields, 'events')),
    deliveries: count,
    redelivered,
  });

  const log: RedisLog = {
    partitions: options.partitions,
    append: (p, record) => send<string>('XADD', [stream(p), '*', 'context', record.context, 'body', record.body, 'events', String(record.events)]),
    appendAll: (context, parts) =>
      send<string[]>('EVAL', [APPEND_ALL, String(parts.length), ...parts.map((part) => stream(part.partition)), context, ...parts.flatMap((part) => [part.body, String(part.events)])]),

    async lease(consumer, leaseMs) {
      const held: number[] = [];
      for (let p = 0; p < options.partitions; p++) {
        const renewed = await send<number>('EVAL', [RENEW, '1', leaseKey(p), consumer, String(leaseMs)]);
        if (Number(renewed) === 1) held.push(p);
        else if ((await send<string | null>('SET', [leaseKey(p), consumer, 'NX', 'PX', String(leaseMs)])) === 'OK') held.push(p);
      }
      return held;
    },

    async release(consumer, p) {
      await send('EVAL', [RELEASE, '1', leaseKey(p), consumer]);
    },

    async takeOver(consumer, p) {
      let cursor = '0-0';
      let claimed = 0;
      do {
        const [next, entries] = await send<[string, StreamEntry[], string[]?]>('XAUTOCLAIM', [stream(p), GROUP, consumer, '0', cursor, 'COUNT', '1000', 'JUSTID']);
        claimed += entries.length;
        cursor = next;
      } while (cursor !== '0-0');
      return claimed;
    },

    async read(consumer, p, count, after) {
      // Its own unacknowledged entries first (a failed batch, or ones just claimed), in order.
      for (const from of [after ?? '0', '>']) {
        const reply = await send<Record<string, StreamEntry[]> | null>('XREADGROUP', ['GROUP', GROUP, consumer, 'COUNT', String(count), 'STREAMS', stream(p), from]);
        const entries = reply?.[stream(p)] ?? [];
        if (!entries.length) continue;
        const counts = await deliveries(p, entries.map(([id]) => id));
        return entries.map((e) => toEntry(p, e, counts.get(e[0]) ?? 1, from !== '>'));
      }
      return [];
    },

    async ack(p, ids) {
      // Lua's unpack takes a few thousand values at most.
      for (let i = 0; i < ids.length; i += ACK_CHUNK) await send('EVAL', [ACK, '2', stream(p), failures(p), GROUP, ...ids.slice(i, i + ACK_CHUNK)]);
    },

    failed: async (p, id) => Number(await send<number>('HINCRBY', [failures(p), id, '1'])),

    async processing(consumer, p, id) {
      await send(id === null ? 'DEL' : 'SET', id === null ? [mark(p)] : [mark(p), `${id} ${consumer}`]);
    },

    async crashed(consumer, p) {
      const reply = await send<[string, number] | null>('EVAL', [CRASHED, '2', mark(p), failures(p), consumer]);
      return reply ? { id: String(reply[0]), failures: Number(reply[1]) } : null;
    },

    pruneConsumers: async (p, minIdleMs, limit = PRUNE_LIMIT) => Number(await send<number>('EVAL', [PRUNE, '2', stream(p), leaseKey(p), GROUP, String(minIdleMs), String(limit)])),

    async deadLetter(entry, reason) {
      await send('XADD', [dead, '*', 'partition', String(entry.partition), 'id', entry.id, 'reason', reason, 'deliveries', String(entry.deliveries), 'context', entry.context, 'body', entry.body, 'events', String(entry.events)]);
      await log.ack(entry.partition, [entry.id]);
    },

    async listDeadLetters() {
      const entries = await send<StreamEntry[]>('XRANGE', [dead, '-', '+']);
      return entries.map(([deadId, fields]) => ({
        deadId,
        partition: Number(field(fields, 'partition')),
        id: field(fields, 'id'),
        reason: field(fields, 'reason'),
        deliveries: Number(field(fields, 'deliveries')),
        context: field(fields, 'context'),
        body: field(fields, 'body'),
        events: Number(field(fields, 'events')),
      }));
    },

    async replayDeadLetters(deadIds) {
      const wanted = deadIds ? new Set(deadIds) : null;
      let replayed = 0;
      for (const letter of await log.listDeadLetters()) {
        if (wanted && !wanted.has(letter.deadId)) continue;
        await log.append(letter.partition % options.partitions, letter);
        await send('XDEL', [dead, letter.deadId]);
        replayed++;
      }
      return replayed;
    },

    async trim(p) {
      const [group] = (await send<Array<Record<string, unknown>>>('XINFO', ['GROUPS', stream(p)])).filter((g) => g.name === GROUP);
      if (!group) return;
      const summary = await send<[number, string | null, string | null, unknown]>('XPENDING', [stream(p), GROUP]);
      // Keep every unacknowledged entry and everything not yet delivered.
      const keepFrom = Number(summary[0]) > 0 && summary[1] ? summary[1] : String(group['last-delivered-id']);
      await send('XTRIM', [stream(p), 'MINID', keepFrom]);
    },

    close: () => {
      closed = true;
      client.close();
    },
  };
  return log;
}

/**
 * A capture node answers 200 once the log has the request: that promise holds only when Redis
 * fsyncs every write before answering. A Redis configured otherwise is refused at start.
 */
async function checkDurable(send: <T>(command: string, args: string[]) => Promise<T>) {
  const setting = async (name: string) => {
    const reply = await send<Record<string, string> | string[]>('CONFIG', ['GET', name]);
    return Array.isArray(reply) ? reply[1] : reply[name];
  };
  const [appendonly, appendfsync] = [await setting('appendonly'), await setting('appendfsync')];
  if (appendonly !== 'yes' || appendfsync !== 'always') {
    throw new LogNotDurableError(`The Redis log must fsync every write before answering (appendonly yes, appendfsync always); it has appendonly ${appendonly}, appendfsync ${appendfsync}.`);
  }
}

/** The log's Redis does not keep what it answered for (the server refuses to start). */
export class LogNotDurableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LogNotDurableError';
  }
}

/** Redis's answer as the API's: the log unreachable or refusing writes is a 503 with Retry-After (nothing was logged). */
function translateRedisError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  return new AppError('unavailable', 'The event log is not available; retry later.', null, { retryAfter: 1, cause: error });
}
