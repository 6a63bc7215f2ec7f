import type { Intake } from '../events/types';
import { LOG_PARTITIONS, LogNotDurableError, openRedisLog, partitionOf, type RedisLog } from './redis-streams';

/**
 * A capture node's intake (ROLE=node): each request is one entry of the cluster's log, in the
 * partition of its project and first distinct id, as the writers read it (its context as JSON,
 * its decoded body as text). Nothing is processed here: the 200 waits only for Redis (fsynced),
 * and normalization, persons and rows are the writers' (src/cluster/writer.ts).
 */
export function createLogIntake(log: RedisLog): Intake {
  const decoder = new TextDecoder();
  return {
    async append(input) {
      // A batch naming several people goes whole to its first one's partition: one entry per
      // request keeps the request's events together (one acknowledgement, one retry).
      const partition = partitionOf(input.context.teamId, input.distinctIds[0] ?? '', log.partitions);
      const body = typeof input.body === 'string' ? input.body : decoder.decode(input.body);
      await log.append(partition, { context: JSON.stringify(input.context), body, events: input.events });
    },
  };
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
