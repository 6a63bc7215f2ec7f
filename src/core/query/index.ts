/** The pure query compiler for the events API: request text in, `{sql, params}` out. */
export { assembleEventsQuery, type EventsQueryParts } from './assemble';
export { COLUMN_NAMES, FUNCTION_NAMES, jsonPointer, readsDistinctIds, readsPersonColumns, type TableName } from './catalog';
export { compileSelect, parseExpressionList, type CompiledSelect } from './compile';
export { assembleStatement, compileStatement, type CompiledStatement, type StatementScope } from './compile-statement';
export { formatInstant, parseIsoInstant, parseRelativeInstant, parseRelativeOrIsoDate, type Instant } from './dates';
export { compileEventFilters, parseListOrder, type EventFilterParams } from './filters';
export { LIMITS } from './limits';
export { parseExpression, parseSelectExpression, type Expr } from './parse';
export { checkRe2Syntax } from './regex';
export { sql, bind, joinSql, trusted, type QueryParam, type SqlFragment } from './sql';
export { tokenize, type Token } from './tokenize';
