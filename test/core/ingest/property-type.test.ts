import { describe, expect, test } from 'bun:test';
import { propertyTypeOf } from '../../../src/core/ingest/property-type';

describe('propertyTypeOf', () => {
  test.each([
    [3, 'Numeric'],
    [-0.5, 'Numeric'],
    [Number.NaN, null],
    [true, 'Boolean'],
    [false, 'Boolean'],
    ['true', 'Boolean'],
    ['FALSE', 'Boolean'],
    ['truest', 'String'],
    ['2024-03-01', 'DateTime'],
    ['2024-03-01T12:00:00Z', 'DateTime'],
    ['2024-03-01T12:00:00.123456+02:00', 'DateTime'],
    ['2024-03-01 12:00', 'DateTime'],
    ['2024/03/01', 'DateTime'],
    ['01/03/2024', 'DateTime'],
    ['2024-03-01 and more', 'String'],
    ['20240301', 'String'],
    ['12', 'String'],
    ['', 'String'],
    ['Chrome', 'String'],
    [null, null],
    [undefined, null],
    [[1, 2], null],
    [{ a: 1 }, null],
  ])('%j is %s', (value, expected) => {
    expect(propertyTypeOf(value)).toBe(expected as never);
  });
});
