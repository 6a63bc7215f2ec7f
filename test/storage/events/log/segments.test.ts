import { expect, test } from 'bun:test';
import { bytesOf, mergeSpans, SEGMENT_RE, segmentName, type SealedSegment, type TimeSpan } from '../../../../src/storage/events/log/segments';

const seg = (id: number, bytes: number): SealedSegment => ({ id, path: segmentName(id), bytes, rows: 1, teams: new Map(), intake: 0, lastSeq: 0 });

test('bytes of segments: all of them, or those up to a segment (what a query waiting for its own finds ahead of it)', () => {
  const queue = [seg(3, 100), seg(4, 20), seg(7, 5)];
  expect(bytesOf(queue)).toBe(125);
  expect(bytesOf(queue, 4)).toBe(120);
  expect(bytesOf(queue, 2)).toBe(0);
  expect(bytesOf([])).toBe(0);
});

test('spans merged per team widen each span; an unknown side makes the result unknown', () => {
  const into = new Map<number, TimeSpan>([[1, [10, 20]]]);
  const merged = mergeSpans(into, new Map<number, TimeSpan>([[1, [5, 15]], [2, [30, 40]]]));
  expect(merged).toEqual(new Map<number, TimeSpan>([[1, [5, 20]], [2, [30, 40]]]));
  expect(mergeSpans(into, undefined)).toBeUndefined();
  expect(mergeSpans(undefined, into)).toBeUndefined();
});

test('segment file names sort in log order and are recognised again', () => {
  expect(segmentName(42)).toBe('seg-0000000000000042.wal');
  expect(SEGMENT_RE.exec(segmentName(42))?.[1]).toBe('0000000000000042');
  expect([segmentName(10), segmentName(9)].sort()).toEqual([segmentName(9), segmentName(10)]);
});
