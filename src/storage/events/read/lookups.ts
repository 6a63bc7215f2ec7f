import { hotColumnFor } from '../../../core/events/columns';
import { bind, joinSql, jsonPointer, sql, trusted, type SqlFragment } from '../../../core/query';
import type { Row } from '../../db';
import type { QueryRunner } from './runner';
import type { TimeRange } from './relation';

/**
 * Lookups of the events API that are not lists: one event by uuid, and the values a property
 * takes. Built over the store's events relation with bound values; run by the request's runner.
 */

/** The columns an event object is made from. */
export const EVENT_ROW_COLUMNS = ['uuid', 'event', 'distinct_id', 'properties', 'timestamp', 'elements_chain'] as const;

const allOf = (...fragments: Array<SqlFragment | null>): SqlFragment =>
  joinSql(fragments.filter((f): f is SqlFragment => f !== null).map((f) => sql`(${f})`), ' AND ');

/** The columns an event object is read with on this runner's engine: EVENT_ROW_COLUMNS and the rest of its exact time. */
export const eventRowColumns = (runner: QueryRunner): string[] => [...EVENT_ROW_COLUMNS, ...runner.timeColumns.slice(1)];

/** One event of the project by uuid, looked for in `range` (all of time without it). */
export async function eventById(runner: QueryRunner, teamId: number, uuid: string, range?: TimeRange): Promise<Row | undefined> {
  const relation = `${(await runner.relation(teamId, range)).sql} AS events`;
  const { bind } = runner.dialect;
  const [row] = await runner.rows(
    sql`SELECT ${trusted(eventRowColumns(runner).join(', '))} FROM ${trusted(relation)} WHERE team_id = ${bind(teamId)} AND uuid = ${bind(uuid)} LIMIT 1`,
  );
  return row;
}

/** The most frequent values of a property among the project's events in `range` (see valuesStatement). */
export async function propertyValues(runner: QueryRunner, teamId: number, q: ValuesQuery, range: TimeRange): Promise<string[]> {
  const relation = `${(await runner.relation(teamId, range)).sql} AS events`;
  const rows = await runner.rows(valuesStatement(runner, relation, teamId, q), 'key');
  return rows.map((r) => String(r.name));
}

/** Events PostHog leaves out of `key=custom_event`. */
export const BUILT_IN_EVENTS = ['$autocapture', '$pageview', '$identify', '$pageleave', '$screen'];

export interface ValuesQuery {
  key: string;
  /** Most events read (newest first is not needed: any recent sample ranks the common values). */
  scanLimit: number;
  /** Case-insensitive substring of the value. */
  value?: string | null;
  eventNames: readonly string[];
  limit: number;
}

/**
 * `/events/values/`: the distinct values of one property, most frequent first. A JSON list
 * contributes its elements; booleans read `true`/`false`, other non-strings their JSON text.
 * A hot property reads its materialized column and skips the JSON entirely.
 */
function valuesStatement(runner: QueryRunner, relation: string, teamId: number, q: ValuesQuery): SqlFragment {
  const d = runner.dialect;
  const scope = allOf(
    sql`team_id = ${d.bind(teamId)}`,
    q.eventNames.length ? sql`event IN (${joinSql(q.eventNames.map((e) => d.bind(e)), ', ')})` : null,
  );
  // The scan is bounded: the engine stops reading once `scanLimit` matching events are in.
  const capped = (inner: SqlFragment) => sql`SELECT * FROM (${inner} LIMIT ${d.bind(q.scanLimit)})`;
  let names: SqlFragment;
  if (q.key === 'custom_event') {
    const builtIn = joinSql(BUILT_IN_EVENTS.map((e) => d.bind(e)), ', ');
    names = capped(sql`SELECT event AS name FROM ${trusted(relation)} WHERE ${scope} AND event NOT IN (${builtIn})`);
  } else {
    const hot = hotColumnFor(q.key);
    if (hot) names = capped(sql`SELECT ${trusted(hot)} AS name FROM ${trusted(relation)} WHERE ${scope} AND ${trusted(hot)} IS NOT NULL`);
    else names = runner.propertyValueNames(relation, scope, q.key, q.scanLimit);
  }
  const contains = q.value ? sql` AND ${d.contains(d.lower(trusted('name')), d.lower(d.bind(q.value)))}` : trusted('');
  return sql`SELECT name, count(*) AS n FROM (${names}) WHERE name IS NOT NULL${contains} GROUP BY name ORDER BY n DESC, name ASC LIMIT ${d.bind(q.limit)}`;
}

/**
 * DuckDB's occurrences of a property's values (`name`, one row each) among the first `scanLimit`
 * events of `relation` meeting `scope`: a list's elements, a string itself, another value its JSON text.
 */
export function duckdbValueNames(relation: string, scope: SqlFragment, key: string, scanLimit: number): SqlFragment {
  const value = sql`json_extract(properties, ${bind(jsonPointer([key]))})`;
  const items = sql`unnest(CASE WHEN json_type(v) = 'ARRAY' THEN json_extract(v, '$[*]') ELSE [v] END)`;
  const values = sql`SELECT * FROM (SELECT v FROM (SELECT ${value} AS v FROM ${trusted(relation)} WHERE ${scope}) WHERE v IS NOT NULL LIMIT ${bind(scanLimit)})`;
  return sql`SELECT json_extract_string(item, '$') AS name FROM (SELECT ${items} AS item FROM (${values}))`;
}
