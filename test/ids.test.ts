import { describe, expect, test } from 'bun:test';
import { newUuidSeed, seededUuids } from '../src/ids';

describe('seededUuids: the ids of a request\'s events without a client uuid', () => {
  test('version 7 at the receive time, the same for the same seed, distinct within a request and across seeds', () => {
    const ms = Date.UTC(2025, 0, 1, 12, 0, 0, 123);
    const seed = '0123456789abcdef';
    const a = seededUuids(ms, seed);
    const first = Array.from({ length: 1_000 }, () => a());
    const again = seededUuids(ms, seed);
    expect(Array.from({ length: 1_000 }, () => again())).toEqual(first);
    expect(new Set(first).size).toBe(1_000);
    for (const id of first) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(first[0]!.replaceAll('-', '').slice(0, 12)).toBe(ms.toString(16).padStart(12, '0'));
    const other = seededUuids(ms, newUuidSeed());
    expect(first).not.toContain(other());
    expect(() => seededUuids(ms, 'not hex')).toThrow('16 hex digits');
  });
});
