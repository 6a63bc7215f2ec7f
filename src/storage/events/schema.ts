import type { Migration } from '../migrations';

/** Events and persons tables (versions 200–299). Owned by the event store. */
export const eventMigrations: Migration[] = [];
