import { syncDir, syncFile } from './fs-sync';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Dead letters: acknowledged events that could not be written (DuckDB rejected the row, or a
 * segment kept failing to load, or WAL bytes failed their checksum). Each entry is a pair of
 * files under `<dataDir>/events/dead-letters/`: `<id>.wal` holds the rows in WAL line format
 * (so a replay feeds them back through the normal write path) and `<id>.json` the reason.
 * Files, not a table: the store must be able to dead-letter while DuckDB itself is failing,
 * and an operator can list them without opening the database.
 */
export interface DeadLetter {
  id: string;
  reason: string;
  /** Rows in the entry (for damaged WAL bytes, the count the frame header claimed, if any). */
  rows: number;
  bytes: number;
  createdAt: string;
  /** Where the rows came from: `segment`, `rows` (rejected rows of a segment) or `damaged-wal`. */
  source: 'segment' | 'rows' | 'damaged-wal' | 'intake';
  segment: number;
  /** Up to a few individual row errors (line + message) for `rows` entries. */
  errors?: Array<{ line: string; message: string }>;
}

export const deadLetterDir = (dataDir: string): string => join(dataDir, 'events', 'dead-letters');
const SAFE_ID = /^[a-z0-9-]+$/;

async function writeDurably(path: string, data: Uint8Array | string): Promise<void> {
  await writeFile(path, data);
  syncFile(path);
}

/** Store rows (WAL line bytes) as a dead letter; durable before it returns. Same id overwrites. */
export async function writeDeadLetter(dataDir: string, entry: Omit<DeadLetter, 'createdAt' | 'bytes'>, payload: Uint8Array): Promise<void> {
  const dir = deadLetterDir(dataDir);
  await mkdir(dir, { recursive: true });
  const meta: DeadLetter = { ...entry, bytes: payload.length, createdAt: new Date().toISOString() };
  await writeDurably(join(dir, `${entry.id}.wal`), payload);
  await writeDurably(join(dir, `${entry.id}.json`), JSON.stringify(meta));
  syncDir(dir);
}

/** Move a whole WAL segment file into the dead letters (a rename: works even on a full disk). */
export async function deadLetterSegmentFile(
  dataDir: string,
  segmentPath: string,
  entry: Omit<DeadLetter, 'createdAt' | 'bytes'>,
  bytes: number,
): Promise<void> {
  const dir = deadLetterDir(dataDir);
  await mkdir(dir, { recursive: true });
  const meta: DeadLetter = { ...entry, bytes, createdAt: new Date().toISOString() };
  // The reason first: a crash between the two leaves a meta without rows (shown as such),
  // never rows that silently vanished from the WAL.
  await writeDurably(join(dir, `${entry.id}.json`), JSON.stringify(meta));
  await rename(segmentPath, join(dir, `${entry.id}.wal`));
  syncDir(dir);
}

/** List dead letters, oldest first. Needs only the data directory (no database). */
export async function listDeadLetters(dataDir: string): Promise<DeadLetter[]> {
  const dir = deadLetterDir(dataDir);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const out: DeadLetter[] = [];
  for (const name of names.filter((n) => n.endsWith('.json')).sort()) {
    try {
      out.push(JSON.parse(await readFile(join(dir, name), 'utf8')) as DeadLetter);
    } catch {
      // a meta torn by a crash mid-write: its .wal (if any) is still there for an operator
    }
  }
  return out.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
}

export async function readDeadLetterPayload(dataDir: string, id: string): Promise<Buffer | null> {
  if (!SAFE_ID.test(id)) return null;
  try {
    return await readFile(join(deadLetterDir(dataDir), `${id}.wal`));
  } catch {
    return null;
  }
}

export async function removeDeadLetter(dataDir: string, id: string): Promise<void> {
  if (!SAFE_ID.test(id)) return;
  const dir = deadLetterDir(dataDir);
  await rm(join(dir, `${id}.wal`), { force: true });
  await rm(join(dir, `${id}.json`), { force: true });
}
