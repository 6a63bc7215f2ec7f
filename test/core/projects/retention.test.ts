import { describe, expect, test } from 'bun:test';
import { retentionDays } from '../../../src/core/projects/retention';

describe('retentionDays: what retention applies and the projects API reports', () => {
  test.each([
    [7, 30, 7],
    [7, undefined, 7],
    [null, 30, null],
    [undefined, 30, 30],
    [undefined, undefined, null],
  ] as const)('own %p, server default %p: %p', (own, serverDefault, expected) => {
    expect(retentionDays(own, serverDefault)).toBe(expected);
  });
});
