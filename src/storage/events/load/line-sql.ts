import { EVENT_LIMITS } from '../../../core/ingest/limits';
import { sqlString } from '../../sql-literal';
import { PERSON_SLOT, LINE_COLUMNS } from '../log/row-lines';

/**
 * The longest row line DuckDB accepts. A line holds an event's counted parts (its properties,
 * name, distinct id and elements chain: at most `EVENT_LIMITS.eventBytes` together) plus its hot
 * property values a second time (`mat_*`: each is in the properties too) and a few hundred bytes
 * of fixed fields: about twice the limit at most (a name, id or chain holding the quote character
 * is written with it doubled, which at most doubles that field). DuckDB's default (2,000,000
 * bytes) refused an event at the limit made mostly of its `$session_id`, and its load with it.
 */
const MAX_LINE_BYTES = 4 * EVENT_LIMITS.eventBytes;

/**
 * DuckDB's read buffer, well under its default (16 × the longest line). With buffers as large as
 * a segment file or larger, the reader's memory was faulted in afresh, page by page, on every
 * load, which costs much on a virtual machine; 8 MiB buffers were reused without faults (see
 * bench/NOTES.md). DuckDB refuses a buffer smaller than the longest line.
 */
const READ_BUFFER_BYTES = Math.max(8 * 1024 * 1024, 2 * MAX_LINE_BYTES);

/**
 * How DuckDB reads row lines (`log/row-lines.ts`) from the log's files and processed copies:
 * `read_csv(...)` over those files, typed per `LINE_COLUMNS`.
 */
export function readLinesSql(files: readonly string[], extra = ''): string {
  const columns = `{${LINE_COLUMNS.map(([n, t]) => `'${n}': '${t}'`).join(', ')}}`;
  const list = `[${files.map(sqlString).join(', ')}]`;
  return (
    `read_csv(${list}, columns = ${columns}, delim = '\x1f', quote = '\x1e', escape = '\x1e', comment = '\x1d', ` +
    `nullstr = '\x15', allow_quoted_nulls = false, header = false, auto_detect = false, new_line = '\\n', strict_mode = true, ` +
    `max_line_size = ${MAX_LINE_BYTES}, buffer_size = ${READ_BUFFER_BYTES}${extra})`
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
