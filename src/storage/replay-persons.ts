import { personEventOf } from '../core/ingest/person-event';
import type { Database } from './db';
import { readWalSql } from './events/wal-format';
import type { PersonStore } from './persons/types';

/**
 * After a crash, events that were acknowledged but not yet loaded are replayed from the log, and
 * the person changes they made in memory may not have reached the database. Before such a
 * segment is loaded, its events are planned again, in log order, against the stored persons:
 * `$set_once`, `$set`, `$unset` and merges are idempotent, and a person created then is created
 * again under the uuid the event already carries.
 */
export async function replayPersonsOf(db: Database, persons: PersonStore, segmentPaths: readonly string[]): Promise<number> {
  const rows = await db.query<{ team_id: number; uuid: string; event: string; distinct_id: string; person_id: string | null; ts_ms: number; properties: string }>(
    `SELECT team_id, uuid, event, distinct_id, person_id, ts_ms, properties FROM ${readWalSql(segmentPaths)}`,
  );
  for (const r of rows) {
    await persons.ensureLoaded(r.team_id);
    let properties: Record<string, unknown>;
    try {
      properties = JSON.parse(r.properties);
    } catch {
      continue; // the loader sends unreadable rows to the dead letters
    }
    persons.processEvent(r.team_id, personEventOf({ uuid: r.uuid, event: r.event, distinctId: r.distinct_id, timestamp: r.ts_ms }, properties), r.person_id);
  }
  await persons.flush();
  return rows.length;
}
