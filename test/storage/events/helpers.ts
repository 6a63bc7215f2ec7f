import { DuckDBInstance } from '@duckdb/node-api';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hotValuesOf, type StoredEventRow } from '../../../src/core/events/columns';
import { openDatabase, type Database } from '../../../src/storage/db';
import { createEventStore, type EventStore, type EventStoreOptions } from '../../../src/storage/events';
import { LINES_TO_EVENT_SELECT, readLinesSql } from '../../../src/storage/events/load/line-sql';

export interface Harness {
  dir: string;
  db: Database;
  store: EventStore;
  reopen(options?: Partial<EventStoreOptions>): Promise<void>;
  cleanup(): Promise<void>;
}

/** A DuckDB database alone on a fresh temp dir (no store), for the tiers' own functions. */
export async function openBareDatabase(options: Parameters<typeof openDatabase>[1] = {}): Promise<{ dir: string; db: Database; cleanup(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'event-db-'));
  const db = await openDatabase(join(dir, 'db.duckdb'), options);
  return {
    dir,
    db,
    async cleanup() {
      await db.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A store on a fresh temp dir; small buffers so tests exercise flushes and compaction. */
export async function openHarness(options: Partial<EventStoreOptions> = {}, dir?: string): Promise<Harness> {
  const root = dir ?? (await mkdtemp(join(tmpdir(), 'event-store-')));
  const base = { dataDir: root, bufferMaxAgeMs: 50, purgeGraceMs: 0, autoCompact: false, ...options };
  const h: Harness = {
    dir: root,
    db: await openDatabase(join(root, 'db.duckdb')),
    store: null as unknown as EventStore,
    async reopen(more = {}) {
      await h.store.close().catch(() => undefined);
      await h.db.close();
      h.db = await openDatabase(join(root, 'db.duckdb'));
      h.store = await createEventStore(h.db, { ...base, ...more });
    },
    async cleanup() {
      await h.store.close().catch(() => undefined);
      await h.db.close().catch(() => undefined);
      await rm(root, { recursive: true, force: true });
    },
  };
  h.store = await createEventStore(h.db, base);
  return h;
}

/**
 * A manual clock for the store (`now`): a test advances it past an age or a grace period instead
 * of sleeping. It starts at the real time and moves only when told, so nothing ages, and no
 * segment is sealed by age, meanwhile; timers (the store's ticks) still run in real time.
 */
export function testClock(start = Date.now()) {
  let t = start;
  return {
    now: () => t,
    advance(ms: number) {
      t += ms;
    },
  };
}

/** Poll `check` on a short real interval: for the store's timer ticks to run, never to let time pass. */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await Bun.sleep(20);
  }
}

let counter = 0;
/** A small valid event; `n` makes the uuid unique and deterministic. */
export function makeEvent(n: number, overrides: Partial<StoredEventRow> = {}): StoredEventRow {
  const props = { $browser: n % 2 ? 'Chrome' : 'Firefox', $os: 'Mac OS X', $current_url: `https://example.com/${n}`, $session_id: `s-${n % 7}`, n };
  const ts = Date.UTC(2024, 0, 1) + n * 1000;
  return {
    uuid: `00000000-0000-7000-8000-${String(n).padStart(12, '0')}`,
    teamId: 1,
    event: '$pageview',
    distinctId: `user-${n % 13}`,
    personId: null,
    properties: JSON.stringify(props),
    timestamp: ts,
    createdAt: ts + 5,
    elementsChain: '',
    hot: hotValuesOf(props),
    ...overrides,
  };
}
export const nextN = () => ++counter;

export async function uuidsOf(h: Harness, teamId = 1): Promise<string[]> {
  const rel = await h.store.eventsRelation(teamId);
  const rows = await h.db.query<{ uuid: string }>(`SELECT uuid FROM ${rel.sql} AS events ORDER BY uuid`, rel.params);
  return rows.map((r) => r.uuid);
}

/**
 * Saturating load on a store: rounds of 50 concurrent `send(i)` every ~10 ms for `ms` (several
 * times the 100 appends per 100 ms that count as saturated). `progress()` is read after round
 * `startRound` (when `during` runs too) and at the end; returns those readings and how many were sent.
 */
export async function saturate(
  ms: number,
  send: (i: number) => Promise<void>,
  progress: () => number,
  { startRound = 1, during }: { startRound?: number; during?: () => void } = {},
): Promise<{ atStart: number; atEnd: number; sent: number }> {
  let sent = 0;
  let atStart = -1;
  const until = performance.now() + ms;
  for (let round = 0; round < 1000 && performance.now() < until; round++) {
    await Promise.all(Array.from({ length: 50 }, (_, i) => send(sent + i)));
    sent += 50;
    await Bun.sleep(8);
    if (round === startRound) {
      atStart = progress();
      during?.();
    }
  }
  return { atStart, atEnd: progress(), sent };
}

/** Lines (framed or not) written to a file and read back by DuckDB as a load reads them. */
export async function readLinesBack(bytes: Uint8Array) {
  const dir = await mkdtemp(join(tmpdir(), 'row-lines-'));
  const file = join(dir, 'seg.wal');
  await writeFile(file, bytes);
  const instance = await DuckDBInstance.create(':memory:');
  const c = await instance.connect();
  try {
    const reader = await c.runAndReadAll(`SELECT ${LINES_TO_EVENT_SELECT} FROM ${readLinesSql([file])}`);
    return reader.getRowObjectsJS();
  } finally {
    c.closeSync();
    instance.closeSync();
    await rm(dir, { recursive: true, force: true });
  }
}
