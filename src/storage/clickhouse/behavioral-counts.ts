import { behavioralEventCondition, behavioralWindow } from '../cohorts/compile-cohort';
import { sql, trusted } from '../../core/query';
import type { BehavioralCounts } from '../definitions/events-source';
import type { EventReads } from '../events/read/reads';
import type { ClickHouse } from './client';

/**
 * A behavioural cohort condition counted in ClickHouse: the project's events in the condition's
 * window (the relation's millisecond bounds, exact on 18.16 too, and what the primary key prunes
 * by) that are its event and meet its property filters, per distinct id. The persons these
 * distinct ids belong to, and the rest of the definition, are resolved where the cohorts are
 * calculated (cohort-calculator.ts): one GROUP BY here, no join, which every version runs.
 */
export function clickhouseBehavioralCounts(ch: ClickHouse, reads: EventReads): BehavioralCounts {
  return async (teamId, leaf, now) => {
    const { since, until } = behavioralWindow(leaf, now);
    // Both ends included: the relation's upper bound is exclusive, and times are whole milliseconds.
    const relation = await reads.eventsRelation(teamId, { from: since.getTime(), to: until.getTime() + 1 });
    const where = behavioralEventCondition(leaf, now, ch.dialect);
    const rows = await ch.query<{ distinct_id: string; n: number | string }>(
      sql`SELECT distinct_id, count() AS n FROM ${trusted(relation.sql)} AS events WHERE ${where} GROUP BY distinct_id`,
    );
    return rows.map((r) => ({ distinctId: String(r.distinct_id), n: Number(r.n) }));
  };
}
