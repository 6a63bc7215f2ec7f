import { bind, DUCKDB, joinSql, jsonPointer, sql, trusted, type Dialect, type SqlFragment } from '../../../core/query';
import { EVENT_CSV_PERSON_COLUMNS, type EventCsvColumn } from '../../../core/events/csv';
import type { PropertyType } from '../../../core/ingest/property-type';
import { sqlString } from '../../sql-literal';
import { allOf, DUCKDB_ENGINE, EVENT_ROW_COLUMNS, eventRowColumns, listOrder, type EventsEngine, type Order } from './list-statements';

/**
 * The SQL of streamed exports. An export reads one slice of time at a time (sorted by DuckDB a
 * slice at a time, so memory stays at a slice whatever the export's size); the slices are planned
 * from row counts by time bucket, so each holds about the same number of rows.
 */

/** Rows by time bucket: `bucket` is the engine's expression of a row's bucket start in epoch ms (EventReads.timeBucket). */
export function bucketCountsStatement(relation: string, teamId: number, where: SqlFragment, bucket: SqlFragment, dialect: Dialect = DUCKDB): SqlFragment {
  return sql`SELECT ${bucket} AS bucket, count(*) AS n FROM ${trusted(relation)} WHERE ${allOf(sql`team_id = ${dialect.bind(teamId)}`, where)} GROUP BY bucket`;
}

/** One slice of a JSON export: the event rows, in list order. */
export function sliceRowsStatement(relation: string, teamId: number, where: SqlFragment, order: Order, limit: number | null, engine: EventsEngine = DUCKDB_ENGINE): SqlFragment {
  const { bind } = engine.dialect;
  const head = sql`SELECT ${trusted(eventRowColumns(engine).join(', '))} FROM ${trusted(relation)} WHERE ${allOf(sql`team_id = ${bind(teamId)}`, where)} ORDER BY ${trusted(
    listOrder(order, engine),
  )}`;
  return limit === null ? head : sql`${head} LIMIT ${bind(limit)}`;
}

/** One slice of a JSON export from a relation already in list order (see `csvSliceScanStatement`). */
export function sliceScanRowsStatement(relation: string, teamId: number, where: SqlFragment): SqlFragment {
  return sql`SELECT ${trusted(EVENT_ROW_COLUMNS.join(', '))} FROM ${trusted(relation)} WHERE ${allOf(sql`team_id = ${bind(teamId)}`, where)}`;
}

/** PostHog's timestamp text (`isoformat()`), written by DuckDB. */
const ISO_TIMESTAMP =
  "CASE WHEN microsecond(page.timestamp) % 1000000 = 0 THEN strftime(page.timestamp, '%Y-%m-%dT%H:%M:%S+00:00') " +
  "ELSE strftime(page.timestamp, '%Y-%m-%dT%H:%M:%S.%f+00:00') END";

const FIXED: Record<string, string> = {
  id: 'page.uuid',
  distinct_id: 'page.distinct_id',
  event: 'page.event',
  elements_chain: 'page.elements_chain',
  timestamp: ISO_TIMESTAMP,
};

/**
 * One slice of a CSV export, written by DuckDB's own CSV writer (RFC 4180 quoting, CRLF) to
 * `file`: the properties are parsed once per row (`json_extract_string` with every key's path; the
 * CTE is inlined, and DuckDB computes the shared list once per row: materializing it was
 * slower, one more copy of every row), and the person columns come from a join on the persons
 * tables. Keys are bound JSON pointers; `file` is a path the server made.
 */
export function csvSliceCopyStatement(
  relation: string,
  teamId: number,
  where: SqlFragment,
  columns: readonly EventCsvColumn[],
  order: Order,
  limit: number | null,
  file: string,
): SqlFragment {
  if (!Number.isSafeInteger(teamId)) throw new Error('teamId must be an integer');
  const people =
    `SELECT pdi.distinct_id AS did, persons.is_identified AS identified, firsts.first_id, ` +
    `json_extract_string(persons.properties, ['/email', '/name', '/username']) AS pp ` +
    `FROM person_distinct_ids AS pdi JOIN persons ON persons.team_id = ${teamId} AND persons.uuid = pdi.person_uuid ` +
    `JOIN (SELECT person_uuid, min(distinct_id) AS first_id FROM person_distinct_ids WHERE team_id = ${teamId} GROUP BY person_uuid) AS firsts ON firsts.person_uuid = pdi.person_uuid ` +
    `WHERE pdi.team_id = ${teamId}`;
  const { page, expressions } = csvPage(relation, teamId, where, columns);
  // Sorting on the time alone is cheaper (see bench/NOTES.md); the uuid tie-break matters only
  // where a LIMIT cuts the slice (which rows of equal time are in), so only the last slice pays for it.
  const orderBy = limit === null ? `page.timestamp ${order}` : `page.timestamp ${order}, page.uuid ${order}`;
  const tail = limit === null ? trusted('') : sql` LIMIT ${bind(limit)}`;
  return sql`COPY (WITH page AS (${page}), people AS (${trusted(people)}) SELECT ${trusted(expressions.join(', '))} FROM page LEFT JOIN people ON people.did = page.distinct_id ORDER BY ${trusted(
    orderBy,
  )}${tail}) TO ${trusted(sqlPath(file))} (${trusted(CSV_OPTIONS)})`;
}

/**
 * One slice of a CSV export read in the relation's own order (a relation already newest first):
 * a scan with WHERE and SELECT only, which DuckDB keeps in insertion order, so nothing is sorted
 * and nothing joined (a join gives up the order). The person columns are left out: the caller
 * splices them into each record (`spliceCsvRecords`).
 */
export function csvSliceScanStatement(relation: string, teamId: number, where: SqlFragment, columns: readonly EventCsvColumn[], file: string): SqlFragment {
  const { page, expressions } = csvPage(relation, teamId, where, columns.filter((c) => c.kind !== 'person'));
  return sql`COPY (WITH page AS (${page}) SELECT ${trusted(expressions.join(', '))} FROM page) TO ${trusted(sqlPath(file))} (${trusted(CSV_OPTIONS)})`;
}

const CSV_OPTIONS = `FORMAT csv, HEADER false, NEW_LINE '\r\n'`;

/** The slice's rows with the properties parsed once (`p`), and each CSV column's expression. */
function csvPage(relation: string, teamId: number, where: SqlFragment, columns: readonly EventCsvColumn[]): { page: SqlFragment; expressions: string[] } {
  const keys = columns.filter((c): c is Extract<EventCsvColumn, { kind: 'property' }> => c.kind === 'property').map((c) => c.key);
  const paths = keys.length ? sql`json_extract_string(properties, [${joinSql(keys.map((k) => sql`${bind(jsonPointer([k]))}::VARCHAR`), ', ')}])` : trusted('NULL');
  let property = 0;
  const expressions = columns.map((c) => {
    if (c.kind === 'fixed') return FIXED[c.name] as string;
    if (c.kind === 'person') return PERSON[c.name];
    return `page.p[${++property}]`;
  });
  const page = sql`SELECT uuid, event, distinct_id, timestamp, elements_chain, ${paths} AS p FROM ${trusted(relation)} WHERE ${allOf(
    sql`team_id = ${bind(teamId)}`,
    where,
  )}`;
  return { page, expressions };
}

const PERSON: Record<(typeof EVENT_CSV_PERSON_COLUMNS)[number], string> = {
  'person.distinct_ids.0': 'people.first_id',
  'person.is_identified': 'people.identified',
  'person.properties.email': 'people.pp[1]',
  'person.properties.name': 'people.pp[2]',
  'person.properties.username': 'people.pp[3]',
};

/** A server-made file path as a SQL string literal (COPY takes no parameter for it). */
function sqlPath(path: string): string {
  if (/[\0\n\r]/.test(path)) throw new Error('unexpected character in an export path');
  return sqlString(path);
}

/**
 * Rows per row group of an exported file. DuckDB's writer holds a row group's rows until it is
 * full, per thread and, to keep the rows in order, for several groups at once: at its default
 * (122,880 rows of ~1 KB events) an export's memory passed DUCKDB_MEMORY_LIMIT, and writing was
 * slower too (see bench/NOTES.md). zstd level 1, as the stored files (storage's PARQUET_WRITE_OPTIONS).
 */
const EXPORT_ROW_GROUP_ROWS = 8192;
const PARQUET_OPTIONS = `FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1, ROW_GROUP_SIZE ${EXPORT_ROW_GROUP_ROWS}`;

/** The columns of an events Parquet export: the timestamp typed, the properties as JSON text, the rest strings. */
const PARQUET_EVENT_COLUMNS =
  'uuid::VARCHAR AS id, distinct_id::VARCHAR AS distinct_id, event::VARCHAR AS event, timestamp::TIMESTAMP AS timestamp, ' +
  'properties::VARCHAR AS properties, elements_chain::VARCHAR AS elements_chain';

/**
 * One slice of an events Parquet export, written by DuckDB to `file`: sorted in list order (a
 * `limit` cuts it only with the uuid tie-break), or, with `scan`, read in the order of a relation
 * already newest first (no sort). `compression` is the final file's zstd, or a fast codec for a
 * part that `parquetConcatStatement` reads back once.
 */
export function parquetSliceCopyStatement(
  relation: string,
  teamId: number,
  where: SqlFragment,
  sort: { order: Order; limit: number | null } | 'scan',
  file: string,
  compression: 'final' | 'part',
): SqlFragment {
  const rows = sql`SELECT ${trusted(PARQUET_EVENT_COLUMNS)} FROM ${trusted(relation)} WHERE ${allOf(sql`team_id = ${bind(teamId)}`, where)}`;
  const sorted = sort === 'scan' ? rows : sql`${rows} ORDER BY ${trusted(listOrder(sort.order))}`;
  const query = sort === 'scan' || sort.limit === null ? sorted : sql`${sorted} LIMIT ${bind(sort.limit)}`;
  return sql`COPY (${query}) TO ${trusted(sqlPath(file))} (${trusted(compression === 'final' ? PARQUET_OPTIONS : PARQUET_PART_OPTIONS)})`;
}

/**
 * Part files are written once and read once, on the same disk: a fast codec costs less CPU than
 * zstd on both sides.
 */
const PARQUET_PART_OPTIONS = `FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE ${EXPORT_ROW_GROUP_ROWS}`;

/**
 * The parts of an export, in their order, as one zstd file: a scan of the files in list order,
 * which DuckDB keeps (insertion order), so the rows stay in export order with no sort, and
 * memory stays at the writer's row groups however many rows the parts hold.
 */
export function parquetConcatStatement(parts: readonly string[], file: string): SqlFragment {
  return sql`COPY (SELECT * FROM read_parquet([${trusted(parts.map(sqlPath).join(', '))}])) TO ${trusted(sqlPath(file))} (${trusted(PARQUET_OPTIONS)})`;
}

/** An events Parquet export with no rows: the same columns and types. */
export function emptyParquetEventsStatement(file: string): SqlFragment {
  const columns =
    'NULL::VARCHAR AS id, NULL::VARCHAR AS distinct_id, NULL::VARCHAR AS event, NULL::TIMESTAMP AS timestamp, NULL::VARCHAR AS properties, NULL::VARCHAR AS elements_chain';
  return sql`COPY (SELECT ${trusted(columns)} LIMIT 0) TO ${trusted(sqlPath(file))} (${trusted(PARQUET_OPTIONS)})`;
}

/**
 * Parquet types of properties by their definitions: numbers as DOUBLE, booleans as BOOLEAN, dates
 * as TIMESTAMP (UTC, an offset in the text honoured). A value that does not fit is NULL: the
 * definition records the type a property showed first, not that every value has it.
 */
const DEFINED_TYPES: Record<PropertyType, ((column: string) => string) | null> = {
  String: null,
  Numeric: (c) => `TRY_CAST(${c} AS DOUBLE)`,
  Boolean: (c) => `TRY_CAST(${c} AS BOOLEAN)`,
  DateTime: (c) => `CAST(TRY_CAST(${c} AS TIMESTAMPTZ) AS TIMESTAMP)`,
};

/**
 * A select query's Parquet export: its columns named as the select names them (`aliases[i]` is
 * renamed `columns[i]`, quoted as an identifier) and typed as DuckDB computes them, or, for a
 * selected property with a definition, as `types[i]` says.
 */
export function parquetSelectCopyStatement(
  query: SqlFragment,
  aliases: readonly string[],
  columns: readonly string[],
  types: ReadonlyArray<PropertyType | null>,
  file: string,
): SqlFragment {
  const renamed = aliases.map((alias, i) => {
    if (!/^c\d+$/.test(alias)) throw new Error('unexpected select alias');
    const type = types[i];
    const typed = type ? DEFINED_TYPES[type] : null;
    return `${typed ? typed(alias) : alias} AS ${quoteIdentifier(columns[i] ?? alias)}`;
  });
  return sql`COPY (SELECT ${trusted(renamed.join(', '))} FROM (${query}) AS q) TO ${trusted(sqlPath(file))} (${trusted(PARQUET_OPTIONS)})`;
}

function quoteIdentifier(name: string): string {
  if (name.includes('\0')) throw new Error('unexpected character in a column name');
  return `"${name.replaceAll('"', '""')}"`;
}
