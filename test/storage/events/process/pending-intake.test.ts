import { describe, expect, test } from 'bun:test';
import { PendingIntake } from '../../../../src/storage/events/process/pending-intake';

describe('PendingIntake', () => {
  test('an id is pending until the last request naming it is processed', () => {
    const p = new PendingIntake(1000);
    p.note(1, ['a', 'b'], 1, 0);
    p.note(1, ['b'], 2, 0);
    p.note(2, ['a'], 3, 0);
    expect(p.pending(1, ['a'], 0)).toBe(true);
    expect(p.pending(1, ['c'], 0)).toBe(false);
    expect(p.target(1, ['a', 'b'], 0, 3)).toBe(2);
    // Request 1 processed: `a` of project 1 is done, `b` still waits for request 2.
    p.sweep(1);
    expect(p.pending(1, ['a'], 1)).toBe(false);
    expect(p.pending(1, ['b'], 1)).toBe(true);
    expect(p.target(1, ['a', 'b'], 1, 3)).toBe(2);
    expect(p.target(2, ['a'], 1, 3)).toBe(3);
    expect(p.size).toBe(2);
    p.sweep(3);
    expect(p.size).toBe(0);
    expect(p.target(1, ['b'], 3, 3)).toBe(0);
  });

  test('ids not indexed when a request is swept are forgotten without an index (counted out)', () => {
    const p = new PendingIntake(1000);
    p.note(1, ['a', 'a', 'b'], 1, 0);
    expect(p.size).toBe(3);
    p.note(1, ['c'], 2, 0);
    p.sweep(1);
    expect(p.size).toBe(1);
    expect(p.pending(1, ['c'], 1)).toBe(true);
    expect(p.pending(1, ['a'], 1)).toBe(false);
  });

  test('a project or every request: the latest unprocessed one', () => {
    const p = new PendingIntake(1000);
    p.note(1, ['a'], 1, 0);
    p.note(2, [], 2, 0);
    expect(p.target(2, null, 0, 2)).toBe(2);
    expect(p.target(1, null, 0, 2)).toBe(1);
    expect(p.target(null, null, 0, 5)).toBe(5);
    expect(p.target(1, null, 1, 2)).toBe(0);
    expect(p.target(null, null, 5, 5)).toBe(0);
  });

  test('past the cap a check for any id waits for the requests not remembered', () => {
    const p = new PendingIntake(3);
    p.note(1, ['a', 'b'], 1, 0);
    p.note(1, ['c', 'd'], 2, 0);
    expect(p.pending(7, ['zzz'], 0)).toBe(true);
    expect(p.target(7, ['zzz'], 0, 2)).toBe(2);
    expect(p.target(1, ['a'], 1, 2)).toBe(2);
    expect(p.pending(7, ['zzz'], 2)).toBe(false);
  });

  test('a long backlog is forgotten in order as it is processed, whatever was indexed', () => {
    const p = new PendingIntake(1_000_000);
    for (let seq = 1; seq <= 10_000; seq++) p.note(1, [`id-${seq % 2500}`], seq, 0);
    expect(p.pending(1, ['id-7'], 0)).toBe(true); // indexes everything
    for (let seq = 10_001; seq <= 12_000; seq++) p.note(1, [`new-${seq}`], seq, 0);
    p.sweep(9_000);
    expect(p.target(1, ['new-11000'], 9_000, 12_000)).toBe(11_000); // noted after the last index
    // Request `seq` names id-(seq mod 2,500): id-7 last at 7,507 (done), id-1600 at 9,100 (pending).
    expect(p.target(1, ['id-7'], 9_000, 12_000)).toBe(0);
    expect(p.target(1, ['id-7', 'id-1600'], 9_000, 12_000)).toBe(9_100);
    expect(p.target(1, ['id-2499'], 9_000, 12_000)).toBe(9_999);
    expect(p.pending(1, ['new-12000'], 9_000)).toBe(true);
    p.sweep(10_000);
    expect(p.pending(1, ['id-1600', 'id-0'], 10_000)).toBe(false);
    expect(p.size).toBe(2_000);
    p.sweep(12_000);
    expect(p.size).toBe(0);
  });
});
