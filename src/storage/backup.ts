import { copyFile, cp, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import type { Database } from './db';
import { deadLetterDir } from './events/log/dead-letters';
import { parquetRoot } from './events/tiers/parquet';
import { personCopyRoot } from './events/tiers/person-copies';
import { sqlString } from './sql-literal';

/**
 * A backup is a directory laid out like DATA_DIR: a copy of the database taken in one statement
 * (so every table, the event log's watermarks and the Parquet manifest are of one moment), the
 * Parquet files that copy names, and the dead letters. The log itself is not copied: the backup
 * is taken after everything acknowledged was loaded, and the copy's watermark says which
 * segments it holds, so a server started on it continues after them. Restoring is copying the
 * directory into an empty DATA_DIR.
 */
export const BACKUP_MARKER = 'hogbase-backup.json';

export interface BackupSummary {
  /** Parquet files (primary files and person copies) in the backup. */
  files: number;
  bytes: number;
}

/**
 * Copy the database and the files it names into `dir` (created; must be empty). The caller holds
 * back every deletion of event files meanwhile (the event store's maintenance) and has loaded
 * what was acknowledged before the backup began.
 */
export async function writeBackup(db: Database, dataDir: string, databaseFile: string, dir: string): Promise<BackupSummary> {
  await mkdir(dir, { recursive: true });
  if ((await readdir(dir)).length > 0) throw new BackupError(`${dir} is not empty: a backup goes into a new or empty directory.`);
  const target = join(dir, databaseFile);
  const { primary, copies } = await db.withReader(async (c) => {
    const [[name]] = (await c.runAndReadAll('SELECT current_database()')).getRowsJS() as string[][];
    await c.run(`ATTACH ${sqlString(target)} AS hogbase_backup`);
    try {
      // One statement, one snapshot: loads committing meanwhile are either wholly in it or not.
      await c.run(`COPY FROM DATABASE "${name.replaceAll('"', '""')}" TO hogbase_backup`);
      const paths = async (table: string) => ((await c.runAndReadAll(`SELECT path FROM hogbase_backup.${table}`)).getRowsJS() as string[][]).map((r) => r[0]);
      return { primary: await paths('event_parquet_files'), copies: await paths('event_person_files') };
    } finally {
      await c.run('DETACH hogbase_backup');
    }
  });
  let bytes = 0;
  for (const [root, list] of [[parquetRoot(dataDir), primary], [personCopyRoot(dataDir), copies]] as const) {
    const into = join(dir, relative(dataDir, root));
    for (const rel of list) {
      await mkdir(dirname(join(into, rel)), { recursive: true });
      await copyFile(join(root, rel), join(into, rel));
      bytes += (await stat(join(into, rel))).size;
    }
  }
  const letters = deadLetterDir(dataDir);
  await cp(letters, join(dir, relative(dataDir, letters)), { recursive: true }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
  });
  const summary = { files: primary.length + copies.length, bytes };
  await writeFile(join(dir, BACKUP_MARKER), JSON.stringify({ createdAt: new Date().toISOString(), ...summary }, null, 2));
  return summary;
}

/** Fill an empty (or absent) DATA_DIR from a backup. The server must be stopped. */
export async function restoreBackup(from: string, dataDir: string): Promise<void> {
  if (!(await stat(join(from, BACKUP_MARKER)).catch(() => null))) throw new BackupError(`${from} is not a backup (no ${BACKUP_MARKER}).`);
  await mkdir(dataDir, { recursive: true });
  if ((await readdir(dataDir)).length > 0) throw new BackupError(`DATA_DIR ${dataDir} is not empty: restore fills an empty data directory.`);
  try {
    await cp(from, dataDir, { recursive: true, filter: (src) => !src.endsWith(BACKUP_MARKER) });
  } catch (error) {
    // Half a restore is worse than none: the next attempt starts from an empty directory again.
    for (const name of await readdir(dataDir)) await rm(join(dataDir, name), { recursive: true, force: true });
    throw error;
  }
}

/** What the operator can fix (a directory that is not empty, not a backup). */
export class BackupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupError';
  }
}
