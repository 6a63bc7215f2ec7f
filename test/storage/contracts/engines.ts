import { describe } from 'bun:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Database } from '../../../src/storage/db';
import type { EventsSourceRef } from '../../../src/storage/definitions/events-source';
import { openMetaStores, type MetaStores } from '../../../src/storage/meta';
import { migrate } from '../../../src/storage/migrations';
import { createTestDatabase, POSTGRES_SKIP_REASON, postgresAvailable } from '../../helpers/postgres';

/**
 * The engines every management-store contract runs against. `open` gives the stores over a new,
 * empty database, wired as `openStorage` wires them (DuckDB always holds the events side).
 */
export interface Engine {
  name: 'duckdb' | 'postgres';
  /** Why this engine's half is skipped here, or null. */
  skip: string | null;
  open(): Promise<Opened>;
}

export interface Opened {
  stores: MetaStores;
  /** The DuckDB database beside (the events side: persons' and cohorts' copies, members). */
  db: Database;
  /** The PostgreSQL database's URL (META_STORE), to read its tables directly; undefined with DuckDB. */
  metaStore?: string;
  /**
   * The same management data opened again by a restarted process (this one closed first). With
   * PostgreSQL, over a new, empty DuckDB directory (nothing the stores need is kept there), or,
   * with `sameFiles`, over the one it had (as a server restarts on its DATA_DIR).
   */
  reopen(options?: { sameFiles?: boolean }): Promise<Opened>;
  /** A second process on the same database, both open: PostgreSQL only (a DuckDB file has one process). */
  another(): Promise<Opened>;
  close(): Promise<void>;
}

async function openWith(metaStore: string | undefined, dir?: string): Promise<Opened> {
  const dataDir = dir ?? (await mkdtemp(join(tmpdir(), 'contract-')));
  const db = await openDatabase(join(dataDir, 'analytics.duckdb'));
  await migrate(db);
  const events: EventsSourceRef = {};
  const stores = await openMetaStores(db, events, { metaStore });
  // As openStorage does, without an event store (no events: cohorts read persons only).
  events.syncPersons = async (teamId) => {
    if (teamId !== undefined && stores.personsElsewhere) await stores.persons.ensureLoaded(teamId);
    await stores.persons.flush();
  };
  await stores.start();
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await stores.persons.flush();
    await stores.cohorts.whenIdle();
    await db.close();
    await stores.close();
  };
  return {
    stores,
    db,
    metaStore,
    async reopen(options = {}) {
      await close();
      if (!metaStore || options.sameFiles) return openWith(metaStore, dataDir);
      await rm(dataDir, { recursive: true, force: true });
      return openWith(metaStore);
    },
    another: () => {
      if (!metaStore) throw new Error('one process per DuckDB file');
      return openWith(metaStore);
    },
    async close() {
      await close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export const ENGINES: Engine[] = [
  { name: 'duckdb', skip: null, open: () => openWith(undefined) },
  { name: 'postgres', skip: postgresAvailable ? null : POSTGRES_SKIP_REASON, open: async () => openWith(await createTestDatabase()) },
];

/** One `describe` per engine running `body`; the PostgreSQL one is skipped, with the reason, without its server. */
export function forEachEngine(store: string, body: (engine: Engine) => void) {
  for (const engine of ENGINES) {
    const title = `${store} contract [${engine.name}]`;
    if (engine.skip) describe.skip(`${title} (skipped: ${engine.skip})`, () => body(engine));
    else describe(title, () => body(engine));
  }
}

/**
 * Projects 1 … `count`, in one organization. The person, definitions and cohort contracts name
 * their projects by number, and a flush writes nothing for a project that does not exist (with
 * several processes on one PostgreSQL database, another may have deleted it).
 */
export async function createProjects(stores: MetaStores, count: number): Promise<void> {
  const { organization, project } = await stores.management.createAccount({ email: 'contracts@example.com', organizationName: 'Contracts' });
  const ids = [project.id];
  while (ids.length < count) ids.push((await stores.management.createProject(organization.id, `Project ${ids.length + 1}`, {})).id);
  if (ids.some((id, i) => id !== i + 1)) throw new Error(`the contracts name projects 1 … ${count}; these were made: ${ids.join(', ')}`);
}

/** Poll `check` until it holds (another process's change arrives within a moment), at most `ms`. */
export async function eventually<T>(read: () => Promise<T> | T, holds: (value: T) => boolean, ms = 3_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (holds(value) || Date.now() > until) return value;
    await Bun.sleep(10);
  }
}
