import { assembleEventsQuery, DUCKDB, isEmptySql, joinSql, readsPersonColumns, sql, trusted, type Dialect, type SqlFragment } from '../../../core/query';
import { EVENT_ROW_COLUMNS } from './lookups';

export { EVENT_ROW_COLUMNS };

/**
 * The SQL of the events API, built from storage's events relation (trusted text: a subquery of
 * one team's rows) and compiled request fragments (bound values only). Every statement scopes
 * to the team with a bound `team_id = ?` outside the request's conditions, on top of the
 * relation's own scope. No function here reads a request string into SQL text.
 */

/** A relation as `FROM` takes it. */
export const asEvents = (relationSql: string): string => `${relationSql} AS events`;

/** Compiled SQL names the person columns only when a request referenced one. */
export const needsPersonProperties = readsPersonColumns;

/** AND of the non-empty fragments, each in its own parentheses. */
export function allOf(...fragments: Array<SqlFragment | null | undefined>): SqlFragment {
  const parts = fragments.filter((f): f is SqlFragment => !!f && !isEmptySql(f));
  return joinSql(parts.map((p) => sql`(${p})`), ' AND ');
}

export type Order = 'ASC' | 'DESC';

/**
 * How the events' engine spells what these statements need: its dialect, and the columns that
 * order events by time exactly with an instant's values for them (a request's QueryRunner gives
 * all three; see storage's EventReads). Without one, DuckDB's.
 */
export interface EventsEngine {
  readonly dialect: Dialect;
  readonly timeColumns: readonly string[];
  timeKey(ms: number): SqlFragment[];
}

/** The list's deterministic order: time, then uuid, in one direction. */
export const listOrder = (order: Order, engine: EventsEngine = DUCKDB_ENGINE): string =>
  [...engine.timeColumns, 'uuid'].map((c) => `${c} ${order}`).join(', ');

/** A key of the list order: the row's timestamp (UTC `YYYY-MM-DD HH:MM:SS.ffffff`) and uuid. */
export interface EventKey {
  uuid: string;
  /** Epoch ms (storage keeps millisecond timestamps). */
  ms: number;
  /** Read for a person's list: the fetch then names it, which picks their rows out of a person copy. */
  distinctId?: string;
}

export const timestampText = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
export const DUCKDB_ENGINE: EventsEngine = {
  dialect: DUCKDB,
  timeColumns: ['timestamp'],
  timeKey: (ms) => [DUCKDB.instant(timestampText(ms), 'datetime')],
};

/**
 * `(time columns…, uuid)` against the key's values in the list order: `cmp` on the first column
 * where they differ, `last` on the uuid when every time column is equal.
 */
function keyCompare(key: EventKey, engine: EventsEngine, cmp: string, last: string): SqlFragment {
  const values = [...engine.timeKey(key.ms), engine.dialect.bind(key.uuid)];
  const columns = [...engine.timeColumns, 'uuid'];
  let out = sql`${trusted(columns[columns.length - 1]!)} ${trusted(last)} ${values[values.length - 1]!}`;
  for (let i = columns.length - 2; i >= 0; i--) {
    const c = trusted(columns[i]!);
    out = sql`${c} ${trusted(cmp)} ${values[i]!} OR (${c} = ${values[i]!} AND ${out})`;
  }
  return out;
}

/** Rows strictly after `key` in the list order: the keyset cursor of the `next` link. */
export function afterKey(key: EventKey, order: Order, engine: EventsEngine = DUCKDB_ENGINE): SqlFragment {
  const cmp = order === 'DESC' ? '<' : '>';
  return keyCompare(key, engine, cmp, cmp);
}

/** Rows up to `key` in the list order, `key` included: what `afterKey` leaves out. */
export function upToKey(key: EventKey, order: Order, engine: EventsEngine = DUCKDB_ENGINE): SqlFragment {
  const cmp = order === 'DESC' ? '>' : '<';
  return keyCompare(key, engine, cmp, `${cmp}=`);
}

export function distinctIdIn(ids: readonly string[], dialect: Dialect = DUCKDB): SqlFragment {
  return sql`distinct_id IN (${joinSql(ids.map((id) => dialect.bind(id)), ', ')})`;
}

/** The columns a whole event row is read with: EVENT_ROW_COLUMNS and the rest of the engine's exact time. */
export const eventRowColumns = (engine: EventsEngine): string[] => [...EVENT_ROW_COLUMNS, ...engine.timeColumns.slice(1)];

/** Phase 1 of a list page: only the keys (and, for a person's list, their distinct ids), which reads the narrow columns. */
export function keysStatement(
  relation: string, teamId: number, where: SqlFragment, order: Order, limit: number, withDistinctId = false, engine: EventsEngine = DUCKDB_ENGINE,
): SqlFragment {
  const columns = ['uuid', ...engine.timeColumns, ...(withDistinctId ? ['distinct_id'] : [])];
  return assembleEventsQuery({ relation, teamId, filters: where, columns, orderBy: listOrder(order, engine), limit, dialect: engine.dialect });
}

/** The key of the `position`-th row (1-based) in list order: one row, whatever the position. */
export function keyAtStatement(relation: string, teamId: number, where: SqlFragment, order: Order, position: number): SqlFragment {
  return assembleEventsQuery({ relation, teamId, filters: where, columns: ['uuid', 'timestamp'], orderBy: listOrder(order), limit: 1, offset: position - 1 });
}


/** A list's first `limit` whole rows in one statement (a person's list; see `personRows`). */
export function pageRowsStatement(relation: string, teamId: number, where: SqlFragment, order: Order, limit: number, engine: EventsEngine = DUCKDB_ENGINE): SqlFragment {
  return assembleEventsQuery({ relation, teamId, filters: where, columns: eventRowColumns(engine), orderBy: listOrder(order, engine), limit, dialect: engine.dialect });
}

/**
 * Phase 2: the full rows of known keys. `timestamp IN (…)` lets DuckDB skip every row group
 * and file that holds none of the keys, so only the properties of the page's rows are read.
 * When every key names its distinct id, `distinct_id IN (…)` does the same in a person copy,
 * whose groups each span a day's times but few distinct ids.
 */
export function rowsByKeysStatement(relation: string, teamId: number, keys: readonly EventKey[], engine: EventsEngine = DUCKDB_ENGINE): SqlFragment {
  const { bind } = engine.dialect;
  // The first time column alone (whole seconds where the engine splits the time): it only narrows the read, the uuids pick the rows.
  const times = [...new Set(keys.map((k) => k.ms))].map((ms) => engine.timeKey(ms)[0]!);
  const uniqueTimes = [...new Map(times.map((t) => [JSON.stringify(t), t])).values()];
  const ids = keys.every((k) => k.distinctId !== undefined) ? [...new Set(keys.map((k) => k.distinctId as string))] : [];
  const byId = ids.length ? sql` AND ${distinctIdIn(ids, engine.dialect)}` : trusted('');
  return sql`SELECT ${trusted(eventRowColumns(engine).join(', '))} FROM ${trusted(relation)} WHERE team_id = ${bind(teamId)} AND timestamp IN (${joinSql(
    uniqueTimes,
    ', ',
  )}) AND uuid IN (${joinSql(keys.map((k) => bind(k.uuid)), ', ')})${byId}`;
}
