import { hotValuesOf, type StoredEventRow } from '../core/events/columns';
import { parseJson } from '../core/ingest/decode-payload';
import { extractEvents, type RawEvent } from '../core/ingest/extract-events';
import { normalizeEvent } from '../core/ingest/normalize-event';
import { uuidv7 } from '../ids';
import type { ProcessIntake } from './events/loader';
import type { PersonStore } from './persons/types';
import type { SeenTracker } from './seen/seen-tracker';

/**
 * What happens to a capture request behind its 200, in log order: its events are normalized
 * (timestamps and clock skew against the receive time, `$set`/`$set_once`, `$ip`), persons are
 * created, updated and merged, event and property definitions noted, and each event becomes a
 * stored row. Events without a name or distinct id are dropped here, as the spec asks.
 *
 * The same function runs after a crash on the logged body (parsed again): everything it reads
 * was fixed at receipt (the context), so a replay plans what the first run would have, and
 * person changes are idempotent (`$set`, `$set_once`, `$unset`, merges). An event without a
 * client uuid gets a new one on a replay, which is harmless: the first run's rows were never
 * committed, or the segment would not be replayed.
 */
export function createIntakeProcessor(persons: PersonStore, seen: SeenTracker): ProcessIntake {
  return async (ctx, parsed, text) => {
    const events = parsed ?? extractEvents(parseJson(text ?? ''), { engage: ctx.engage }).events;
    const now = new Date(ctx.receivedAt);
    const context = {
      now,
      sentAt: ctx.sentAt === null ? null : new Date(ctx.sentAt),
      ip: ctx.ip,
      anonymizeIps: ctx.anonymizeIps,
      newUuid: () => uuidv7(ctx.receivedAt),
    };
    await persons.ensureLoaded(ctx.teamId);
    const rows: StoredEventRow[] = [];
    for (const raw of events) {
      const result = normalizeEvent(raw as RawEvent, context);
      if (!('ok' in result)) continue;
      const e = result.ok;
      const plan = persons.processEvent(ctx.teamId, e);
      seen.record(ctx.teamId, e.event, e.timestamp, e.properties, Object.keys(e.set).length ? e.set : null);
      rows.push({
        uuid: e.uuid,
        teamId: ctx.teamId,
        event: e.event,
        distinctId: e.distinctId,
        personId: plan.personId,
        properties: JSON.stringify(e.properties),
        timestamp: e.timestamp,
        createdAt: ctx.receivedAt,
        elementsChain: e.elementsChain,
        hot: hotValuesOf(e.properties),
      });
    }
    return rows;
  };
}
