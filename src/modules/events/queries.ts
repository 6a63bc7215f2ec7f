import { assembleEventsQuery, bind, joinSql, readsPersonColumns, sql, trusted, type SqlFragment } from '../../core/query';
import { eventsWithPersons } from '../../storage';
import { EVENT_ROW_COLUMNS } from '../../storage/events/lookups';

export { EVENT_ROW_COLUMNS };

/**
 * The SQL of the events API, built from storage's events relation (trusted text: a subquery of
 * one team's rows) and compiled request fragments (bound values only). Every statement scopes
 * to the team with a bound `team_id = ?` outside the request's conditions, on top of the
 * relation's own scope. No function here reads a request string into SQL text.
 */

/** A relation as `FROM` takes it. */
export const asEvents = (relationSql: string): string => `${relationSql} AS events`;

/** The relation plus the event's person columns (`person_properties`, …): storage's join. */
export const withPersonProperties = eventsWithPersons;

/** Compiled SQL names the person columns only when a request referenced one. */
export const needsPersonProperties = readsPersonColumns;

/** AND of the non-empty fragments, each in its own parentheses. */
export function allOf(...fragments: Array<SqlFragment | null | undefined>): SqlFragment {
  const parts = fragments.filter((f): f is SqlFragment => !!f && f.sql.trim() !== '');
  return joinSql(parts.map((p) => sql`(${p})`), ' AND ');
}

export type Order = 'ASC' | 'DESC';

/** The list's deterministic order: time, then uuid, in one direction. */
export const listOrder = (order: Order): string => `timestamp ${order}, uuid ${order}`;

/** A key of the list order: the row's timestamp (UTC `YYYY-MM-DD HH:MM:SS.ffffff`) and uuid. */
export interface EventKey {
  uuid: string;
  /** Epoch ms (storage keeps millisecond timestamps). */
  ms: number;
  /** Read for a person's list: the fetch then names it, which picks their rows out of a person copy. */
  distinctId?: string;
}

export const timestampText = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
const ts = (ms: number): SqlFragment => sql`CAST(${bind(timestampText(ms))} AS TIMESTAMP)`;

/** Rows strictly after `key` in the list order: the keyset cursor of the `next` link. */
export function afterKey(key: EventKey, order: Order): SqlFragment {
  const cmp = trusted(order === 'DESC' ? '<' : '>');
  return sql`timestamp ${cmp} ${ts(key.ms)} OR (timestamp = ${ts(key.ms)} AND uuid ${cmp} ${bind(key.uuid)})`;
}

/** Rows up to `key` in the list order, `key` included: what `afterKey` leaves out. */
export function upToKey(key: EventKey, order: Order): SqlFragment {
  const cmp = trusted(order === 'DESC' ? '>' : '<');
  return sql`timestamp ${cmp} ${ts(key.ms)} OR (timestamp = ${ts(key.ms)} AND uuid ${cmp}= ${bind(key.uuid)})`;
}

export function distinctIdIn(ids: readonly string[]): SqlFragment {
  return sql`distinct_id IN (${joinSql(ids.map((id) => bind(id)), ', ')})`;
}

/** Phase 1 of a list page: only the keys (and, for a person's list, their distinct ids), which reads the narrow columns. */
export function keysStatement(relation: string, teamId: number, where: SqlFragment, order: Order, limit: number, withDistinctId = false): SqlFragment {
  const columns = withDistinctId ? ['uuid', 'timestamp', 'distinct_id'] : ['uuid', 'timestamp'];
  return assembleEventsQuery({ relation, teamId, filters: where, columns, orderBy: listOrder(order), limit });
}

/** The key of the `position`-th row (1-based) in list order: one row, whatever the position. */
export function keyAtStatement(relation: string, teamId: number, where: SqlFragment, order: Order, position: number): SqlFragment {
  return assembleEventsQuery({ relation, teamId, filters: where, columns: ['uuid', 'timestamp'], orderBy: listOrder(order), limit: 1, offset: position - 1 });
}


/** A list's first `limit` whole rows in one statement (a person's list; see `personRows`). */
export function pageRowsStatement(relation: string, teamId: number, where: SqlFragment, order: Order, limit: number): SqlFragment {
  return assembleEventsQuery({ relation, teamId, filters: where, columns: [...EVENT_ROW_COLUMNS], orderBy: listOrder(order), limit });
}

/**
 * Phase 2: the full rows of known keys. `timestamp IN (…)` lets DuckDB skip every row group
 * and file that holds none of the keys, so only the properties of the page's rows are read.
 * When every key names its distinct id, `distinct_id IN (…)` does the same in a person copy,
 * whose groups each span a day's times but few distinct ids.
 */
export function rowsByKeysStatement(relation: string, teamId: number, keys: readonly EventKey[]): SqlFragment {
  const times = [...new Set(keys.map((k) => k.ms))];
  const ids = keys.every((k) => k.distinctId !== undefined) ? [...new Set(keys.map((k) => k.distinctId as string))] : [];
  const byId = ids.length ? sql` AND ${distinctIdIn(ids)}` : trusted('');
  return sql`SELECT ${trusted(EVENT_ROW_COLUMNS.join(', '))} FROM ${trusted(relation)} WHERE team_id = ${bind(teamId)} AND timestamp IN (${joinSql(
    times.map(ts),
    ', ',
  )}) AND uuid IN (${joinSql(keys.map((k) => bind(k.uuid)), ', ')})${byId}`;
}
