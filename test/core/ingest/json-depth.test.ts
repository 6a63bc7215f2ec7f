import { describe, expect, test } from 'bun:test';
import { exceedsJsonDepth } from '../../../src/core/ingest/json-depth';

const nested = (depth: number, open = '[', close = ']') => open.repeat(depth) + close.repeat(depth);

describe('exceedsJsonDepth', () => {
  test.each([
    ['flat', '{"a":1,"b":[1,2]}', 2, false],
    ['exactly the limit', nested(3), 3, false],
    ['one past the limit', nested(4), 3, true],
    ['objects count as arrays do', '{"a":{"b":{"c":{}}}}', 3, true],
    ['siblings do not add up', '[[],[],[],[]]', 2, false],
    ['brackets inside strings are text', '["[[[[{{{{", "}}]]"]', 1, false],
    ['an escaped quote does not end a string', '["a\\"[[[[[", 1]', 1, false],
    ['an escaped backslash before a quote does', '["a\\\\", [[[1]]]]', 3, true],
    ['an unterminated string is left to the parser', '["[[[[[', 1, false],
    ['100,000 levels', `{"x":${nested(100_000)}}`, 128, true],
    // Long enough to be looked at: no more openings than the limit cannot nest past it.
    ['as many openings as the limit, nested', `[{"a":["${'x'.repeat(50)}"]}]`, 3, false],
    ['one opening more, nested', `[{"a":[["${'x'.repeat(50)}"]]}]`, 3, true],
    ['arrays only, one past the limit', `[[[["${'x'.repeat(50)}"]]]]`, 3, true],
    ['many openings, all in strings', `["${'[{'.repeat(20)}", {"a":1}]`, 3, false],
  ] as const)('%s', (_name, text, max, expected) => {
    expect(exceedsJsonDepth(text, max)).toBe(expected);
  });
});
