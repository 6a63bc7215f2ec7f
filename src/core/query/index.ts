/** The pure query compiler for the events API: request text in, `{sql, params}` out. */
export { assembleEventsQuery, assembleStatement, type EventsQueryParts, type StatementScope } from './assemble';
export { COLUMN_NAMES, FUNCTION_NAMES, jsonPointer, readsDistinctIds, readsPersonColumns, STAR_FIELDS, type TableName } from './catalog';
export { compileSelect, parseExpressionList, type CompiledSelect, type SelectedProperty } from './compile';
export { compileStatement, type CompiledStatement } from './compile-statement';
export { compileEventsQuery, type CompiledEventsQuery, type EventsQueryColumn, type EventsQueryContext, type EventsQueryInput } from './compile-events-query';
export { type Dialect, type RenderedSql } from './dialect';
export { DUCKDB } from './dialect-duckdb';
export { CLICKHOUSE, CLICKHOUSE_18, clampClickHouseTime, clickhouseDialect, CLICKHOUSE_TIME_RANGE_MS, clickhouseFeatures, clickhouseLiteral, type ClickHouseFeatures } from './dialect-clickhouse';
export { formatInstant, parseIsoInstant, parseRelativeInstant, parseRelativeOrIsoDate, type Instant } from './dates';
export { compileEventFilters, parseListOrder, type EventFilterParams } from './filters';
export { LIMITS, queryTimeout } from './limits';
export { parseExpression, parseSelectExpression, type Expr } from './parse';
export { checkRe2Syntax } from './regex';
export { sql, bind, isEmptySql, joinSql, trusted, type QueryParam, type SqlFragment } from './sql';
export { tokenize, type Token } from './tokenize';
