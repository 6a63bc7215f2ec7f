/** The expression tree. `pos` is the 0-based character offset in the source expression. */
export type Expr =
  | { kind: 'literal'; value: string | number | boolean | null; isFloat?: boolean; pos: number }
  | { kind: 'field'; chain: string[]; pos: number }
  | { kind: 'call'; name: string; args: Expr[]; star: boolean; pos: number }
  | { kind: 'arith'; op: '+' | '-' | '*' | '/' | '%'; left: Expr; right: Expr; pos: number }
  | { kind: 'compare'; op: CompareOp; left: Expr; right: Expr; pos: number }
  | { kind: 'logical'; op: 'AND' | 'OR'; operands: Expr[]; pos: number }
  | { kind: 'not'; operand: Expr; pos: number }
  | { kind: 'neg'; operand: Expr; pos: number }
  | { kind: 'in'; negated: boolean; operand: Expr; list: Expr[]; pos: number }
  | { kind: 'isNull'; negated: boolean; operand: Expr; pos: number }
  | { kind: 'like'; negated: boolean; caseInsensitive: boolean; operand: Expr; pattern: Expr; pos: number }
  | { kind: 'interval'; amount: number; unit: IntervalUnit; pos: number }
  /** A UTC instant resolved by the compiler itself (filters' `after`/`before`); never parsed. */
  | { kind: 'instant'; value: string; date: boolean; pos: number };

export type CompareOp = '=' | '!=' | '<' | '<=' | '>' | '>=';
export type IntervalUnit = 'second' | 'minute' | 'hour' | 'day' | 'week' | 'month' | 'quarter' | 'year';

export interface ParsedSelect {
  expr: Expr;
  alias: string | null;
}

/** One entry of a statement's select list; `text` is the entry as written (PostHog's column name). */
export interface SelectEntry {
  expr: Expr;
  alias: string | null;
  text: string;
}

/** `SELECT … FROM <table> [WHERE …] [GROUP BY …] [HAVING …] [ORDER BY …] [LIMIT n] [OFFSET n]`. */
export interface SelectStatement {
  distinct: boolean;
  /** `SELECT *`: the table's columns; `select` is then empty. */
  star: boolean;
  select: SelectEntry[];
  from: { table: string; alias: string | null; pos: number };
  /** Conditions ANDed (the query's one WHERE, or an EventsQuery's entries, each with its origin). */
  where: Expr[];
  groupBy: Expr[];
  having: Expr[];
  orderBy: Array<{ expr: Expr; descending: boolean }>;
  limit: { value: number; pos: number } | null;
  offset: { value: number; pos: number } | null;
}
