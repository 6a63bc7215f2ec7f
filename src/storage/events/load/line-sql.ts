import { sqlString } from '../../sql-literal';
import { PERSON_SLOT, LINE_COLUMNS } from '../log/row-lines';

/**
 * How DuckDB reads row lines (`log/row-lines.ts`) from the log's files and processed copies:
 * `read_csv(...)` over those files, typed per `LINE_COLUMNS`.
 */
export function readLinesSql(files: readonly string[], extra = ''): string {
  const columns = `{${LINE_COLUMNS.map(([n, t]) => `'${n}': '${t}'`).join(', ')}}`;
  const list = `[${files.map(sqlString).join(', ')}]`;
  return (
    `read_csv(${list}, columns = ${columns}, delim = '\x1f', quote = '\x1e', escape = '\x1e', comment = '\x1d', ` +
    `nullstr = '\x15', allow_quoted_nulls = false, header = false, auto_detect = false, new_line = '\\n', strict_mode = true${extra})`
  );
}

/**
 * The SELECT list turning row-line columns into events columns (EVENT_COLUMNS order). `checkedJson`:
 * the properties are known to be JSON DuckDB reads (rows the intake processor made), so the
 * per-row parse that would refuse a bad one is left out (a large part of a load's CPU).
 */
export const linesToEventSelect = (checkedJson = false): string =>
  `uuid, team_id, event, distinct_id, nullif(person_id, '${PERSON_SLOT}') AS person_id, ${checkedJson ? 'properties' : 'properties::JSON AS properties'}, ` +
  'make_timestamp(ts_ms * 1000) AS timestamp, ' +
  'make_timestamp(created_ms * 1000) AS created_at, elements_chain, mat_browser, mat_os, mat_current_url, mat_session_id';

export const LINES_TO_EVENT_SELECT = linesToEventSelect();
