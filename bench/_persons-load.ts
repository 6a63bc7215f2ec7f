// A restart, for bench/persons.ts: a fresh process opens the store over `argv[2]` (with
// `argv[5]` as META_STORE when given) and loads project 1's persons as its first request would
// (`chunks`: the person store's own load), or,
// for the baseline (`whole`), reads the same rows whole with `query` and builds the same maps, as
// the load did before it read them a chunk at a time. Prints as JSON the time, the heap the
// persons hold, and the peak of the process's resident size during the load over its size before.
// Its own process, so nothing of the parent's (freed or not by then) moves the figures.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DATABASE_FILE, DEFAULT_MEMORY_LIMIT, openStorage } from '../src/storage';
import { openDatabase, type Database } from '../src/storage/db';

// `metaStore`: persons kept in PostgreSQL (META_STORE), loaded from it and synced into DuckDB's copy.
const [dataDir, mode, probe, metaStore] = process.argv.slice(2) as [string, string, string, string | undefined];
if (mode !== 'chunks' && mode !== 'whole') throw new Error(`mode: chunks or whole, not ${mode}`);
const heap = () => {
  Bun.gc(true);
  return process.memoryUsage().heapUsed;
};
/** The process's resident peak since the last reset (VmHWM; Linux), in bytes. */
const peakRss = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))![1]) * 1024;
/** Start the peak afresh from the resident size now, so the start-up's own peak is not counted. */
const resetPeak = () => writeFileSync('/proc/self/clear_refs', '5');

async function loadWhole(db: Database) {
  const persons = new Map<string, { id: number; uuid: string; teamId: number; properties: unknown; isIdentified: boolean; createdAt: number; distinctIds: string[] }>();
  const byDistinctId = new Map<string, unknown>();
  const rows = await db.query<{ id: number; uuid: string; properties: string; is_identified: boolean; created_at: Date }>(
    'SELECT id, uuid::VARCHAR AS uuid, properties, is_identified, created_at FROM persons WHERE team_id = ?',
    [1],
  );
  for (const r of rows) persons.set(r.uuid, { id: r.id, uuid: r.uuid, teamId: 1, properties: JSON.parse(r.properties), isIdentified: r.is_identified, createdAt: r.created_at.getTime(), distinctIds: [] });
  const ids = await db.query<{ distinct_id: string; person_uuid: string }>('SELECT distinct_id, person_uuid::VARCHAR AS person_uuid FROM person_distinct_ids WHERE team_id = ?', [1]);
  for (const r of ids) {
    const p = persons.get(r.person_uuid);
    if (!p) continue;
    p.distinctIds.push(r.distinct_id);
    byDistinctId.set(r.distinct_id, p);
  }
  return byDistinctId.has(probe) ? [persons, byDistinctId] : null;
}

// The baseline opens the database alone, with the store's memory cap and spill directory.
const storage = mode === 'chunks' ? await openStorage({ dataDir, ...(metaStore ? { metaStore } : {}) }) : null;
const db = storage ? null : await openDatabase(join(dataDir, DATABASE_FILE), { memoryLimit: DEFAULT_MEMORY_LIMIT, tempDirectory: join(dataDir, 'tmp') });
try {
  const heapBefore = heap();
  const rssBefore = process.memoryUsage().rss;
  resetPeak();
  const started = performance.now();
  let held: unknown = null;
  if (db) held = await loadWhole(db);
  else {
    await storage!.persons.ensureLoaded(1);
    held = storage!.persons.findByDistinctId(1, probe);
  }
  const loadMs = performance.now() - started;
  const peak = peakRss() - rssBefore;
  console.log(JSON.stringify({ loadMs, heap: heap() - heapBefore, peak, found: held !== null }));
} finally {
  await storage?.close();
  await db?.close();
}
