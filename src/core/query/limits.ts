import { AppError } from '../../errors';

/**
 * Caps on what a request may ask the compiler to do. They keep parsing and compiling bounded in
 * time and stack (a hostile `((((…` or a 10 000-deep filter group must be a 400, not a crash) and
 * keep every interval sum inside DuckDB's timestamp range.
 */
export const LIMITS = {
  /** Entries in `select` or in `where`. */
  expressions: 50,
  /** Characters in one expression. */
  expressionLength: 10_000,
  /** Tokens in one expression (bounds the depth of left-leaning operator chains too). */
  tokens: 1_000,
  /** Characters and tokens of one query statement (the query endpoint). */
  statementLength: 50_000,
  statementTokens: 5_000,
  /** Placeholder values of one query, and characters of one string value. */
  placeholders: 100,
  placeholderLength: 100_000,
  /** Depth of one expression's tree, and of the parser's recursion (parentheses, calls, NOT, minus). */
  nesting: 32,
  /** Nested property groups. */
  propertyDepth: 10,
  /** Property filters in one request, across all groups. */
  propertyFilters: 200,
  /** Values in one `IN (...)` list or one filter's value list. */
  listValues: 1_000,
  /** Sum of the interval literals in one expression, in years. */
  intervalYears: 10_000,
} as const;

/** Every compiler error is a 400 naming the query parameter it came from. */
export const invalidInput = (detail: string, attr: string): AppError => new AppError('invalid_input', detail, attr);

/** Where in which expression, e.g. `at position 14 of where[0]`. */
export const at = (pos: number, label: string): string => `at position ${pos} of ${label}`;

/** A statement past its time limit (504): the API's words, whichever engine stopped it. */
export const queryTimeout = (ms?: number): AppError =>
  new AppError('query_timeout', `The query did not finish${ms ? ` within ${ms} ms` : ' in time'}. Narrow it down (a time range, fewer events) and retry.`);
