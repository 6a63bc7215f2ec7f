import { describe, expect, test } from 'bun:test';
import { compactionDue, compactionEnd, mergePolicy } from '../../../../src/storage/events/tiers/maintenance';
import { pickMerge } from '../../../../src/storage/events/tiers/compaction';
import type { ParquetFile } from '../../../../src/storage/events/tiers/parquet';

const s = { autoCompact: true, compactMinRows: 1000, compactMaxAgeMs: 60_000 };
const NOW = 1_000_000;

describe('background work under saturation', () => {
  test('compaction is due at its threshold, or twice it while appends saturate the store; age always counts', () => {
    const due = (rows: number, saturated: boolean, oldestAt: number | null = NOW) => compactionDue(rows, oldestAt, s, saturated, NOW);
    expect([due(999, false), due(1000, false), due(1000, true), due(1999, true), due(2000, true)]).toEqual([false, true, false, false, true]);
    expect(due(10, true, NOW - 60_000)).toBe(true);
    expect(due(0, false, NOW - 60_000)).toBe(false);
    expect(compactionDue(5000, NOW, { ...s, autoCompact: false }, false, NOW)).toBe(false);
  });

  test('a team-day is merged at the policy file count, or four times it while appends saturate the store; a merge takes that count, oldest first', () => {
    const file = (i: number, day: string): ParquetFile =>
      ({ path: `1/${day}/f${i}.parquet`, teamId: 1, day, rows: 100, minTs: i, maxTs: i, createdAt: 1000 - i }) as unknown as ParquetFile;
    const files = [...Array.from({ length: 8 }, (_, i) => file(i, '2024-01-01')), ...Array.from({ length: 31 }, (_, i) => file(100 + i, '2024-01-02'))];
    const policy = { minFiles: 8, minAgeMs: 0, maxFileRows: 1_000_000 };
    const oldest8 = [130, 129, 128, 127, 126, 125, 124, 123].map((i) => `1/2024-01-02/f${i}.parquet`);
    expect(pickMerge(files, mergePolicy(policy, false), NOW)?.map((f) => f.path)).toEqual(oldest8); // the day with the most files
    expect(pickMerge(files, mergePolicy(policy, true), NOW)).toBeNull(); // 31 < 32
    expect(pickMerge(files.slice(0, 8), mergePolicy(policy, false), NOW)).toHaveLength(8);
    const saturatedPick = pickMerge([...files, file(200, '2024-01-02')], mergePolicy(policy, true), NOW);
    expect(saturatedPick?.map((f) => f.path)).toEqual([200, 130, 129, 128, 127, 126, 125, 124].map((i) => `1/2024-01-02/f${i}.parquet`));
    expect(pickMerge(files, policy, NOW)).toHaveLength(31); // the bare policy: all of them
  });

  test('a merge writes at most maxFileRows: it takes the oldest small files that fit together, passing over one that fits beside none, and none when no two fit', () => {
    const file = (i: number, rows: number): ParquetFile =>
      ({ path: `1/2024-01-01/f${i}.parquet`, teamId: 1, day: '2024-01-01', rows, minTs: i, maxTs: i, createdAt: 1000 + i }) as unknown as ParquetFile;
    const policy = { minFiles: 3, minAgeMs: 0, maxFileRows: 1000 };
    const picked = (files: ParquetFile[]) => pickMerge(files, policy, NOW)?.map((f) => f.path.slice(13)) ?? null;
    // 600 + 300 fit; 700 would pass 1000 and waits; 100 still fits.
    expect(picked([file(1, 600), file(2, 700), file(3, 300), file(4, 100), file(5, 50)])).toEqual(['f1.parquet', 'f3.parquet', 'f4.parquet']);
    // The oldest file fits beside none of the others: it is passed over, not merged alone, and the others still merge.
    expect(picked([file(1, 990), file(2, 100), file(3, 200), file(4, 300)])).toEqual(['f2.parquet', 'f3.parquet', 'f4.parquet']);
    // Three small files, no two within the limit: nothing to merge.
    expect(picked([file(1, 600), file(2, 700), file(3, 999)])).toBeNull();
    // The files at the limit are left alone and do not count.
    expect(picked([file(1, 1000), file(2, 5000), file(3, 10), file(4, 20)])).toBeNull();
    // The partition with the most small files wins only when some of them fit together.
    const other = (i: number, rows: number) => ({ ...file(i, rows), day: '2024-01-02', path: `1/2024-01-02/g${i}.parquet` }) as ParquetFile;
    expect(picked([file(1, 900), file(2, 900), file(3, 900), file(4, 900), other(5, 10), other(6, 10), other(7, 10)])).toEqual(['g5.parquet', 'g6.parquet', 'g7.parquet']);
  });

  test('a compaction run takes the oldest loads up to its row budget, at least one, else everything loaded', () => {
    const hot = [
      { seg: 3, rows: 600 },
      { seg: 5, rows: 600 },
      { seg: 9, rows: 600 },
    ];
    expect(compactionEnd(hot, 9, 1000)).toBe(5);
    expect(compactionEnd(hot, 9, 500)).toBe(3);
    expect(compactionEnd(hot, 9, 1200)).toBe(5);
    expect(compactionEnd(hot, 9, Number.POSITIVE_INFINITY)).toBe(9);
    expect(compactionEnd([], 4, 1000)).toBe(4);
  });
});
