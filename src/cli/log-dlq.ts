import type { DeadLetterEntry, RedisLog } from '../storage/log/redis-streams';
import { UsageError, type Flags } from './commands';

/**
 * `dlq list|replay` in cluster mode (EVENT_LOG set, as for ROLE=node or writer): the dead letters
 * are the log's (requests a writer gave up on after its retries, moved aside so the partition goes
 * on), not a data directory's. Replaying logs them again in their partitions; a writer then
 * processes them as any new request (it dead-letters one again if it still fails).
 */
export async function runLogDlq(log: RedisLog, flags: Flags, args: string[], out: (text: string) => void): Promise<void> {
  const sub = args[0];
  if (sub === 'list') {
    const letters = (await log.listDeadLetters()).map(describeLetter);
    out(flags.json ? JSON.stringify(letters) : letters.map((d) => `${d.id}  partition ${d.partition}  entry ${d.entry_id}  ${d.events} events  ${d.deliveries} deliveries  ${d.reason}`).join('\n') || '(no dead letters)');
  } else if (sub === 'replay') {
    const ids = Array.isArray(flags.id) ? flags.id : undefined;
    if (ids) {
      const known = new Set((await log.listDeadLetters()).map((d) => d.deadId));
      const unknown = ids.filter((id) => !known.has(id));
      if (unknown.length) throw new UsageError(`no dead letter with id ${unknown.join(', ')} (dlq list shows them)`);
    }
    const replayed = await log.replayDeadLetters(ids);
    out(flags.json ? JSON.stringify({ replayed }) : `replayed ${replayed} dead letter(s) into the log; a writer processes them next`);
  } else throw new UsageError('dlq needs a subcommand: list or replay');
}

/** One dead letter as the operator reads it: its id there, where it came from, why, and the request as logged. */
function describeLetter(d: DeadLetterEntry) {
  return { id: d.deadId, partition: d.partition, entry_id: d.id, events: d.events, deliveries: d.deliveries, reason: d.reason, context: d.context, body: d.body };
}
