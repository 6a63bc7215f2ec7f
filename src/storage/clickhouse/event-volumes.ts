import { joinSql, sql, trusted } from '../../core/query';
import type { EventVolumes } from '../definitions/events-source';
import type { EventReads } from '../events/read/reads';
import type { ClickHouse } from './client';

/**
 * Event definitions' volumes counted in ClickHouse: one GROUP BY over the project's events in the
 * window (both ends included, as the DuckDB count), counting distinct uuids instead of reading the
 * table FINAL: a load retried after an unknown outcome wrote its rows twice, and an exact count of
 * uuids drops the copy without merging the project's whole window first.
 */
export function clickhouseEventVolumes(ch: ClickHouse, reads: EventReads): EventVolumes {
  return async (teamId, names, since, until) => {
    if (!names.length) return new Map();
    // The relation's upper bound is exclusive, and times are whole milliseconds.
    const relation = await reads.eventsRelation(teamId, { from: since.getTime(), to: until.getTime() + 1 }, { onePerUuid: true });
    const list = joinSql(names.map((name) => ch.dialect.bind(name)), ', ');
    const rows = await ch.query<{ event: string; n: number | string }>(
      sql`SELECT event, uniqExact(uuid) AS n FROM ${trusted(relation.sql)} AS events WHERE event IN (${list}) GROUP BY event`,
    );
    return new Map(rows.map((r) => [String(r.event), Number(r.n)]));
  };
}
