import type { PropertyKeysByDay } from '../process/processed-copy';

/** The log's segment files: their names, and what the store knows of a sealed one. */
export const segmentName = (id: number): string => `seg-${String(id).padStart(16, '0')}.wal`;
export const SEGMENT_RE = /^seg-(\d{16})\.wal$/;
/** A segment's processed copy (its intake frames turned into rows) sits next to it under this suffix. */
export const PROCESSED_SUFFIX = '.proc';

/** A closed segment waiting to be loaded into DuckDB. */
export interface SealedSegment {
  id: number;
  path: string;
  bytes: number;
  rows: number;
  /** Rows per team, so a query can wait only for the segments holding its team. */
  teams: Map<number, number>;
  /**
   * The span of event times per team ([earliest, latest] epoch ms), so a load checks for a
   * retry's original only in the Parquet files it could be in. Absent when unknown (a segment
   * found by recovery, a dead-letter replay): then every file is a candidate.
   */
  spans?: Map<number, TimeSpan>;
  /** Intake frames in the segment (capture requests still to be turned into rows). */
  intake: number;
  /**
   * Frames written to its file (absent: found by recovery). Equal to the memos' count (one a
   * request) when every frame written was acknowledged and each request was one frame: then
   * processing from memory needs nothing from the file.
   */
  frames?: number;
  /**
   * The decoded form of each frame, in file order (null for a frame without one), kept while
   * memory allows so processing need not parse the bodies again; absent after recovery.
   */
  memos?: unknown[];
  /** The highest intake sequence number in the segment (0: none). */
  lastSeq: number;
  /** Epoch ms when its file was opened for writing (absent: found by recovery). */
  openedAt?: number;
  /**
   * False when every row of the segment was certainly new when it was logged (recent-uuids.ts);
   * true or absent (recovery, replays): its load takes the full dedupe check. Intake frames
   * count as new here: their rows are tested when they are processed.
   */
  mayRepeat?: boolean;
  /**
   * The oldest recent-uuid generation its rows were added to the filter in (`RecentUuids`);
   * -Infinity or absent when some row was not added (recovery, replays), Infinity when none is
   * known yet (intake frames count once processed).
   */
  uuidGen?: number;
  /** Its rows' property keys by team and day, when processing gave them all (see `EncodedRows.propertyKeys`). */
  propertyKeys?: PropertyKeysByDay;
  /**
   * Every row of its processed copy came from the intake processor, whose properties are JSON
   * DuckDB reads (see `EncodedRows`): the load takes them without checking each as JSON.
   */
  checkedJson?: boolean;
  /** Bytes of its processed copy, the rows a load reads (absent: not processed yet, or its log file is what is loaded). */
  loadBytes?: number;
}

export type TimeSpan = [lo: number, hi: number];

/** The bytes of these segments' log files, of those up to segment `upTo` when given (no array made: every capture request asks, through the backpressure check). */
export function bytesOf(segments: readonly SealedSegment[], upTo = Infinity): number {
  let n = 0;
  for (const seg of segments) if (seg.id <= upTo) n += seg.bytes;
  return n;
}

/** What loading the segment reads: its processed copy's bytes, or its log file's. */
export const loadBytesOf = (seg: SealedSegment): number => seg.loadBytes ?? seg.bytes;

/** Merge `from` into `into` (widening each team's span); `undefined` (unknown) wins. */
export function mergeSpans(into: Map<number, TimeSpan> | undefined, from: ReadonlyMap<number, TimeSpan> | undefined): Map<number, TimeSpan> | undefined {
  if (!into || !from) return undefined;
  for (const [team, [lo, hi]] of from) {
    const cur = into.get(team);
    into.set(team, cur ? [Math.min(cur[0], lo), Math.max(cur[1], hi)] : [lo, hi]);
  }
  return into;
}
