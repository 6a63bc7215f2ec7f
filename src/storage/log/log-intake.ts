import { parseJson } from '../../core/ingest/decode-payload';
import { extractEvents } from '../../core/ingest/extract-events';
import { eventDistinctId } from '../../core/ingest/normalize-event';
import type { Intake, IntakeInput } from '../events/types';
import { LOG_PARTITIONS, LogNotDurableError, openRedisLog, partitionOf, type LogRecord, type RedisLog } from './redis-streams';

/**
 * A capture node's intake (ROLE=node): a request's events go to the log's partition of their
 * project and distinct id, as the writers read them (the request's context as JSON, the events
 * as text), so each distinct id's events are in one partition, in the order their requests were
 * logged, and one writer at a time processes them. A request naming one partition's people (the
 * usual: a browser's batch) is one entry, its body as received; one naming people of several
 * partitions (a server SDK's batch) is split, one entry per partition holding its events, in
 * their order in the request. Nothing is processed here: the 200 waits only for Redis (fsynced),
 * and normalization, persons and rows are the writers' (src/cluster/writer.ts).
 */
export function createLogIntake(log: RedisLog): Intake {
  const decoder = new TextDecoder();
  return {
    async append(input) {
      const context = JSON.stringify(input.context);
      const parts = partsOf(input, log.partitions, decoder);
      // One entry, or every part in one script (all logged or none): a request that fails left
      // nothing in the log, and its retry is the only copy. An event without its own uuid is
      // named by the writer from its entry's log id (the same each time that entry is processed).
      if (parts.length === 1) await log.append(parts[0]!.partition, { context, ...parts[0]!.record });
      else await log.appendAll(context, parts.map(({ partition, record }) => ({ partition, ...record })));
    },
  };
}

type Part = { partition: number; record: Omit<LogRecord, 'context'> };

/** The request's entries: one per partition its events' distinct ids fall in. */
function partsOf(input: IntakeInput, partitions: number, decoder: TextDecoder): Part[] {
  const teamId = input.context.teamId;
  const whole = (partition: number): Part[] => [{ partition, record: { body: typeof input.body === 'string' ? input.body : decoder.decode(input.body), events: input.events } }];
  // Without the parsed events (another thread parsed them), the ids the request names tell
  // whether it needs splitting at all: a superset of the events' own, so one partition for all
  // of them is one for every event.
  const named = new Set(input.distinctIds.map((id) => partitionOf(teamId, id, partitions)));
  if (named.size <= 1) return whole(named.values().next().value ?? partitionOf(teamId, '', partitions));
  const events = input.parsed ?? parsedBody(input, decoder);
  const byPartition = new Map<number, unknown[]>();
  for (const event of events) {
    // An event without a distinct id is dropped by processing: any partition will do.
    const id = typeof event === 'object' && event !== null ? eventDistinctId(event as Record<string, unknown>) : null;
    const partition = partitionOf(teamId, id ?? '', partitions);
    const part = byPartition.get(partition);
    if (part) part.push(event);
    else byPartition.set(partition, [event]);
  }
  if (byPartition.size === 1) return whole(byPartition.keys().next().value!);
  // A part's body is its events as a list: the writer reads only the events from a body (the
  // request's key, sent_at and address are in the context, shared by every part).
  return [...byPartition].map(([partition, part]) => ({ partition, record: { body: JSON.stringify(part), events: part.length } }));
}

function parsedBody(input: IntakeInput, decoder: TextDecoder): unknown[] {
  const text = typeof input.body === 'string' ? input.body : decoder.decode(input.body);
  return extractEvents(parseJson(text), { engage: input.context.engage, logged: true }).events;
}

/** The log EVENT_LOG names, as every node and writer of a deployment opens it (the same partitions). */
export async function openEventLog(url: string): Promise<RedisLog> {
  try {
    return await openRedisLog({ url, partitions: LOG_PARTITIONS });
  } catch (error) {
    if (error instanceof LogNotDurableError) throw error;
    throw new EventLogUnreachableError(url, error);
  }
}

/** The Redis of EVENT_LOG did not answer (the process refuses to start). */
export class EventLogUnreachableError extends Error {
  constructor(url: string, cause: unknown) {
    const reason = (cause as { cause?: unknown })?.cause ?? cause;
    super(`The event log ${url.replace(/\/\/([^@/]*)@/, '//***@')} (EVENT_LOG) cannot be reached: ${reason instanceof Error ? reason.message : String(reason)}`, { cause });
    this.name = 'EventLogUnreachableError';
  }
}
