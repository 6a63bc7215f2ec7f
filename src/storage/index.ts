import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { openDatabase, type Database } from './db';
import { migrate } from './migrations';
import { createManagementStore } from './management/management-store';
import type { ManagementStore } from './management/types';
import { createDefinitionsStore, type DefinitionsStore } from './definitions/definitions-store';

export { DatabaseLockedError } from './db';
export * from './management/types';
export type { DefinitionsStore } from './definitions/definitions-store';

/** Everything the service keeps, behind engine-neutral interfaces. */
export interface Storage {
  management: ManagementStore;
  definitions: DefinitionsStore;
  /** Delete a project and every row that belongs to it. */
  deleteProject(projectId: number): Promise<void>;
  close(): Promise<void>;
}

export interface StorageOptions {
  dataDir: string;
}

export const DATABASE_FILE = 'analytics.duckdb';

export async function openStorage(options: StorageOptions): Promise<Storage> {
  await mkdir(options.dataDir, { recursive: true });
  const db: Database = await openDatabase(join(options.dataDir, DATABASE_FILE));
  try {
    await migrate(db);
  } catch (error) {
    await db.close();
    throw error;
  }
  const management = createManagementStore(db);
  const definitions = createDefinitionsStore(db);
  return {
    management,
    definitions,
    async deleteProject(projectId) {
      await management.deleteProject(projectId);
      await definitions.deleteTeam(projectId);
    },
    close: () => db.close(),
  };
}
