import { at, invalidInput, LIMITS } from './limits';

/**
 * Tokenizer for the HogQL subset the events API accepts. It is deliberately strict: a character
 * that has no meaning in the subset (`;`, `[`, `?`, `@`, `{`, `#`, …) and any comment are errors
 * with their position, so nothing a request sends is silently skipped or passed through.
 */
export type TokenKind = 'ident' | 'quoted' | 'string' | 'number' | 'op' | 'lparen' | 'rparen' | 'comma' | 'dot' | 'placeholder' | 'eof';

export interface Token {
  kind: TokenKind;
  /** Decoded text: identifier name, string contents, number literal, or operator. */
  value: string;
  /** Lower-cased name when a bare identifier is one of KEYWORDS or RESERVED. */
  keyword?: string;
  pos: number;
  end: number;
}

export const KEYWORDS = new Set([
  'and', 'or', 'not', 'like', 'ilike', 'in', 'is', 'null', 'interval', 'true', 'false', 'as',
]);

/** SQL words with no meaning in the subset; named in the error instead of "unknown field". */
export const RESERVED = new Set([
  'select', 'from', 'where', 'union', 'all', 'with', 'join', 'insert', 'update', 'delete', 'drop',
  'create', 'alter', 'copy', 'attach', 'detach', 'pragma', 'install', 'load', 'set', 'call', 'into',
  'values', 'table', 'limit', 'offset', 'group', 'order', 'by', 'having', 'case', 'when', 'then',
  'else', 'end', 'cast', 'distinct', 'exists', 'between', 'over', 'partition', 'using', 'on',
  'returning', 'describe', 'show', 'export', 'import', 'checkpoint', 'vacuum', 'begin', 'commit',
  'rollback', 'truncate', 'grant', 'execute', 'prepare', 'intersect', 'except', 'lambda', 'array',
]);

const OPERATORS = ['==', '!=', '<>', '<=', '>=', '=', '<', '>', '+', '-', '*', '/', '%'];
const SIMPLE_ESCAPES: Record<string, string> = {
  n: '\n', t: '\t', r: '\r', '0': '\0', b: '\b', f: '\f', v: '\v', a: '\x07', '\\': '\\', "'": "'", '"': '"', '`': '`',
};
const IDENT_START = /[A-Za-z_$]/;
const IDENT_PART = /[A-Za-z0-9_$]/;
const NUMBER = /^\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/;

/** A whole statement (the query endpoint) rather than one expression: longer, and `{name}` placeholders. */
export interface TokenizeOptions {
  statement?: boolean;
  /**
   * `-- …` to the end of the line is a comment: PostHog's EventsQuery columns carry their label so
   * (`properties.$lib -- Library`). Everywhere else a comment is an error.
   */
  lineComments?: boolean;
}

const PLACEHOLDER = /^\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}/;

export function tokenize(source: string, label: string, attr: string, options: TokenizeOptions = {}): Token[] {
  const maxLength = options.statement ? LIMITS.statementLength : LIMITS.expressionLength;
  const maxTokens = options.statement ? LIMITS.statementTokens : LIMITS.tokens;
  if (source.length > maxLength) {
    throw invalidInput(`${options.statement ? 'Query' : `Expression ${label}`} is longer than ${maxLength} characters`, attr);
  }
  const tokens: Token[] = [];
  let i = 0;
  const fail = (what: string, pos: number): never => {
    throw invalidInput(`${what} ${at(pos, label)}`, attr);
  };
  while (i < source.length) {
    const ch = source[i] as string;
    if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r') {
      i++;
      continue;
    }
    if (tokens.length >= maxTokens) fail(`${options.statement ? 'Query' : 'Expression'} has more than ${maxTokens} tokens`, i);
    if (options.lineComments && source.startsWith('--', i)) {
      const end = source.indexOf('\n', i);
      i = end < 0 ? source.length : end;
      continue;
    }
    if (source.startsWith('--', i) || source.startsWith('/*', i)) fail('Comments are not allowed', i);
    const start = i;
    if (IDENT_START.test(ch)) {
      while (i < source.length && IDENT_PART.test(source[i] as string)) i++;
      const value = source.slice(start, i);
      const lower = value.toLowerCase();
      const keyword = KEYWORDS.has(lower) || RESERVED.has(lower) ? lower : undefined;
      tokens.push({ kind: 'ident', value, keyword, pos: start, end: i });
    } else if (/\d/.test(ch)) {
      const text = NUMBER.exec(source.slice(i))?.[0] as string;
      i += text.length;
      if (i < source.length && IDENT_PART.test(source[i] as string)) fail(`Unexpected character '${source[i]}'`, i);
      tokens.push({ kind: 'number', value: text, pos: start, end: i });
    } else if (ch === "'" || ch === '"' || ch === '`') {
      const { value, end } = readQuoted(source, i, fail);
      i = end;
      tokens.push({ kind: ch === "'" ? 'string' : 'quoted', value, pos: start, end });
    } else if (ch === '{' && options.statement) {
      // Only a whole `{name}`: its value is bound by the parser, never read as text.
      const m = PLACEHOLDER.exec(source.slice(i, i + 200));
      if (!m) fail('Expected a placeholder {name}', i);
      i += (m as RegExpExecArray)[0].length;
      tokens.push({ kind: 'placeholder', value: (m as RegExpExecArray)[1] as string, pos: start, end: i });
    } else if (ch === '(' || ch === ')' || ch === ',' || ch === '.') {
      i++;
      const kind = ch === '(' ? 'lparen' : ch === ')' ? 'rparen' : ch === ',' ? 'comma' : 'dot';
      tokens.push({ kind, value: ch, pos: start, end: i });
    } else {
      const op = OPERATORS.find((o) => source.startsWith(o, i));
      if (!op) fail(`Unexpected character '${ch}'`, i);
      i += (op as string).length;
      tokens.push({ kind: 'op', value: op as string, pos: start, end: i });
    }
  }
  tokens.push({ kind: 'eof', value: '', pos: source.length, end: source.length });
  return tokens;
}

/**
 * A quoted literal: '…' is a string, "…" and `…` are identifiers. The quote is escaped by doubling
 * it or with a backslash; an unknown backslash escape keeps its backslash (as ClickHouse does), so
 * LIKE patterns such as 'a\%' arrive intact.
 */
function readQuoted(source: string, start: number, fail: (what: string, pos: number) => never) {
  const quote = source[start] as string;
  let value = '';
  let i = start + 1;
  while (i < source.length) {
    const ch = source[i] as string;
    if (ch === quote) {
      if (source[i + 1] === quote) {
        value += quote;
        i += 2;
        continue;
      }
      return { value, end: i + 1 };
    }
    if (ch === '\\' && i + 1 < source.length) {
      const next = source[i + 1] as string;
      value += SIMPLE_ESCAPES[next] ?? '\\' + next;
      i += 2;
      continue;
    }
    value += ch;
    i++;
  }
  return fail(quote === "'" ? 'Unterminated string literal' : 'Unterminated quoted identifier', start);
}
