import { syncDir, syncFile } from './fs-sync';
import { mkdir, readdir, readFile, rename, rm, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { deadLetterDir, writeDeadLetter } from './dead-letters';
import { scanFrames } from './frame-reader';
import { PROCESSED_SUFFIX, SEGMENT_RE, type SealedSegment } from './segments';

/** A team id standing for "any team" (rows whose teams were not counted, e.g. replays). */
export const ANY_TEAM = -1;

export interface RecoveredWal {
  segments: SealedSegment[];
  /** First segment id never used before (by the log or a dead letter). */
  nextId: number;
  removedApplied: number;
  damagedBytes: number;
}


/**
 * Bring the log back after a crash: segments at or below the applied watermark were loaded
 * (their delete was cut short) and go; the others are checked frame by frame. A torn or
 * corrupt range (never acknowledged after a crash, or disk damage) is cut out into the dead
 * letters so nothing disappears silently, and the segment keeps its whole frames.
 */
export async function recoverWal(dataDir: string, walDir: string, appliedSegment: number): Promise<RecoveredWal> {
  await mkdir(walDir, { recursive: true });
  let maxId = appliedSegment;
  let removedApplied = 0;
  let damagedBytes = 0;
  const segments: SealedSegment[] = [];
  const names = (await readdir(walDir)).sort();
  for (const name of names) {
    const path = join(walDir, name);
    const m = SEGMENT_RE.exec(name);
    if (!m) {
      // .tmp: a half-written rewrite; .proc: a segment's processed copy, made again from the log.
      if (name.endsWith('.tmp') || name.endsWith(PROCESSED_SUFFIX)) await rm(path, { force: true });
      continue;
    }
    const id = Number(m[1]);
    maxId = Math.max(maxId, id);
    if (id <= appliedSegment) {
      await rm(path, { force: true });
      removedApplied++;
      continue;
    }
    const data = await readFile(path);
    const scan = scanFrames(data);
    if (scan.damaged.length > 0) {
      for (const d of scan.damaged) {
        damagedBytes += d.end - d.start;
        await writeDeadLetter(
          dataDir,
          {
            id: `damaged-${id}-${d.start}`,
            reason: `WAL segment ${id}: ${d.end - d.start} bytes at offset ${d.start} failed their checksum (a write cut short by a crash, never acknowledged, or disk damage)`,
            rows: 0,
            source: 'damaged-wal',
            segment: id,
          },
          data.subarray(d.start, d.end),
        );
      }
      const kept = Buffer.concat(scan.frames.map((f) => data.subarray(f.start, f.end)));
      await writeFile(`${path}.tmp`, kept);
      syncFile(`${path}.tmp`);
      await rename(`${path}.tmp`, path);
      syncDir(walDir);
    } else if (scan.zeroTail > 0) {
      // A segment made ahead, cut short by the crash: its unused zeros go (DuckDB reads row segments as they are).
      await truncate(path, data.length - scan.zeroTail);
      syncFile(path);
    }
    const rows = scan.frames.reduce((n, f) => n + f.rows, 0);
    if (rows === 0) {
      await rm(path, { force: true });
      continue;
    }
    segments.push({
      id,
      path,
      bytes: scan.frames.reduce((n, f) => n + f.end - f.start, 0),
      rows,
      teams: new Map([[ANY_TEAM, rows]]),
      intake: scan.frames.filter((f) => f.kind === 'intake').length,
      lastSeq: 0,
    });
  }
  // Dead letters carry segment ids in their names: never hand one out again.
  try {
    for (const name of await readdir(deadLetterDir(dataDir))) {
      const m = /^(?:seg|rows|damaged|intake)-(\d+)/.exec(name);
      if (m) maxId = Math.max(maxId, Number(m[1]));
    }
  } catch {
    // no dead letters yet
  }
  return { segments, nextId: maxId + 1, removedApplied, damagedBytes };
}
