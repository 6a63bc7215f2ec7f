import { describe, expect, test } from 'bun:test';
import { AppError } from '../../../src/errors';
import {
  assembleEventsQuery, checkRe2Syntax, compileEventFilters, compileSelect, parseExpression, parseExpressionList,
  parseListOrder, parseRelativeOrIsoDate, tokenize,
} from '../../../src/core/query';
import { CASES, DATE_CASES, NOW, REGEX_CASES, type QueryCase } from './cases';

function compileCase(c: QueryCase) {
  return {
    filters: compileEventFilters(c.filters ?? {}, NOW),
    select: c.select ? compileSelect(c.select, c.where ?? [], NOW) : null,
  };
}

function errorOf(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error instanceof AppError ? { kind: error.kind, status: error.status, attr: error.attr, detail: error.detail } : error;
  }
  return 'no error';
}

describe('compiled SQL per case', () => {
  test.each(CASES.filter((c) => c.error).map((c) => [c.name, c] as const))('400: %s', (_name, c) => {
    expect(errorOf(() => compileCase(c))).toEqual({ kind: 'invalid_input', status: 400, ...c.error });
  });

  test.each(CASES.filter((c) => c.sql && !c.error).map((c) => [c.name, c] as const))('exact: %s', (_name, c) => {
    const { filters, select } = compileCase(c);
    const expected = c.sql ?? {};
    const frag = (sql: string | null, params: unknown[]) => (sql === null ? null : { sql, params });
    const actual: Record<string, unknown> = {
      filters: { sql: filters.sql, params: filters.params },
      select: select && frag(select.selectSql, select.selectParams),
      where: select && frag(select.whereSql, select.whereParams),
      having: select && frag(select.havingSql, select.havingParams),
      groupBy: select?.groupBySql,
      orderBy: select?.orderBySql,
      columns: select?.columns,
      types: select?.types,
    };
    const picked = Object.fromEntries(Object.keys(expected).map((k) => [k, actual[k]]));
    expect(picked).toEqual(expected);
  });

  test('every SQL text has as many placeholders as params', () => {
    for (const c of CASES.filter((x) => !x.error)) {
      const { filters, select } = compileCase(c);
      expect(filters.sql.split('?').length - 1).toBe(filters.params.length);
      if (select) {
        expect(select.selectSql.split('?').length - 1).toBe(select.selectParams.length);
        expect((select.whereSql ?? '').split('?').length - 1).toBe(select.whereParams.length);
        expect((select.havingSql ?? '').split('?').length - 1).toBe(select.havingParams.length);
      }
    }
  });
});

describe('countOnly: the select only counts the rows', () => {
  test.each([
    [['count()'], [], true],
    [['COUNT(*)'], [], true],
    [['count() AS n'], [], true],
    [['count()'], ["event = 'x'"], false],
    [['count(properties.plan)'], [], false],
    [['count()', 'event'], [], false],
    [['uniq(distinct_id)'], [], false],
    [['count() + 1'], [], false],
  ] as const)('%j where %j: %p', (select, where, expected) => {
    expect(compileSelect([...select], [...where], NOW).countOnly).toBe(expected);
  });
});

describe('parseRelativeOrIsoDate', () => {
  // Objects, not tuples: bun reads a third callback parameter as `done`.
  test.each(DATE_CASES.map(([input, expected, now]) => ({ input, expected, now: now ?? null })))('$input → $expected', ({ input, expected, now }) => {
    const at = now ? new Date(now) : NOW;
    if (expected === null) {
      expect(errorOf(() => parseRelativeOrIsoDate(input, at, 'after'))).toMatchObject({ kind: 'invalid_input', attr: 'after' });
    } else {
      expect(parseRelativeOrIsoDate(input, at, 'after')).toBe(expected);
    }
  });
});

describe('checkRe2Syntax', () => {
  test.each(REGEX_CASES)('%p valid: %p', (pattern, valid) => {
    expect(checkRe2Syntax(pattern) === null).toBe(valid);
  });
});

describe('tokenize and parse', () => {
  test('tokens carry positions, keywords and decoded text', () => {
    const tokens = tokenize("properties.$browser NOT ILIKE 'it''s\\n' AND `a b` >= 1.5e3", 'where[0]', 'where');
    expect(tokens.map((t) => [t.kind, t.value, t.pos, t.keyword ?? null])).toEqual([
      ['ident', 'properties', 0, null],
      ['dot', '.', 10, null],
      ['ident', '$browser', 11, null],
      ['ident', 'NOT', 20, 'not'],
      ['ident', 'ILIKE', 24, 'ilike'],
      ['string', "it's\n", 30, null],
      ['ident', 'AND', 40, 'and'],
      ['quoted', 'a b', 44, null],
      ['op', '>=', 50, null],
      ['number', '1.5e3', 53, null],
      ['eof', '', 58, null],
    ]);
  });

  test('the tree of a typical where', () => {
    expect(parseExpression("event = 'a' and not properties.x is null or count(*) > 1", 'where[0]', 'where')).toEqual({
      kind: 'logical', op: 'OR', pos: 6, operands: [
        {
          kind: 'logical', op: 'AND', pos: 6, operands: [
            { kind: 'compare', op: '=', pos: 6, left: { kind: 'field', chain: ['event'], pos: 0 }, right: { kind: 'literal', value: 'a', pos: 8 } },
            { kind: 'not', pos: 16, operand: { kind: 'isNull', negated: false, pos: 33, operand: { kind: 'field', chain: ['properties', 'x'], pos: 20 } } },
          ],
        },
        { kind: 'compare', op: '>', pos: 53, left: { kind: 'call', name: 'count', args: [], star: true, pos: 44 }, right: { kind: 'literal', value: 1, isFloat: false, pos: 55 } },
      ],
    });
  });
});

describe('assembleEventsQuery', () => {
  test('select, filters, where, group, having, order, limit: params in placeholder order', () => {
    const select = compileSelect(['event', 'count()'], ["properties.plan = 'pro'", 'count() > 1'], NOW);
    const filters = compileEventFilters({ after: '-7d' }, NOW);
    expect(assembleEventsQuery({ relation: 'events', teamId: 7, filters, select, limit: 101, offset: 5 })).toEqual({
      sql: 'SELECT event AS c0, count(*) AS c1 FROM events WHERE team_id = ? AND (timestamp > CAST(? AS TIMESTAMP) AND timestamp < CAST(? AS TIMESTAMP))'
        + ' AND (json_extract_string(properties, ?) = ?) GROUP BY c0 HAVING count(*) > ? ORDER BY c1 DESC LIMIT ? OFFSET ?',
      params: [7, '2024-01-03 12:00:00.000000', '2024-01-10 12:00:05.000000', '/plan', 'pro', 1, 101, 5],
    });
  });

  test('a plain list with trusted columns and order', () => {
    const filters = compileEventFilters({ event: '$pageview' }, NOW);
    expect(assembleEventsQuery({ relation: 'events', teamId: 1, filters, columns: ['uuid', 'timestamp'], orderBy: 'timestamp ASC', limit: 100 })).toEqual({
      sql: 'SELECT uuid, timestamp FROM events WHERE team_id = ? AND (event = ? AND timestamp < CAST(? AS TIMESTAMP)) ORDER BY timestamp ASC LIMIT ? OFFSET ?',
      params: [1, '$pageview', '2024-01-10 12:00:05.000000', 100, 0],
    });
  });
});

describe('query parameter helpers', () => {
  test.each([
    ['["event","count()"]', ['event', 'count()']],
    [['["event"]'], ['event']],
    [['event', 'count()'], ['event', 'count()']],
    [undefined, []],
    ['', []],
  ] as const)('parseExpressionList(%p)', (input, expected) => {
    expect(parseExpressionList(input, 'select')).toEqual([...expected]);
  });

  test.each(['event', '{"a":1}', '[1]', ['[1]']])('parseExpressionList(%p) is a 400', (input) => {
    expect(errorOf(() => parseExpressionList(input, 'select'))).toEqual({
      kind: 'invalid_input', status: 400, attr: 'select', detail: 'select must be a JSON array of strings',
    });
  });

  test.each([[undefined, 'DESC'], ['["-timestamp"]', 'DESC'], ['["timestamp"]', 'ASC']] as const)('parseListOrder(%p)', (input, expected) => {
    expect(parseListOrder(input)).toBe(expected);
  });

  test('parseListOrder refuses other orders', () => {
    expect(errorOf(() => parseListOrder('["event"]'))).toMatchObject({ status: 400, attr: 'orderBy' });
  });
});
