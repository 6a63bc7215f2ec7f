import type { Logger } from '../logger';
import { createCohortStore } from './cohorts/cohort-store';
import type { CohortStore } from './cohorts/types';
import type { Database } from './db';
import { createDefinitionsStore, type DefinitionsStore } from './definitions/definitions-store';
import type { EventsSourceRef } from './definitions/events-source';
import { createFlagStore } from './flags/flag-store';
import type { FlagStore } from './flags/types';
import { createInviteStore } from './invites/invite-store';
import type { InviteStore } from './invites/types';
import { createManagementStore } from './management/management-store';
import type { ManagementStore } from './management/types';
import { createPersonStore } from './persons/person-store';
import type { PersonMirror, PersonStore } from './persons/types';
import { openPostgresMetaStores } from './postgres';
import { createSeenRows, type SeenRows } from './seen/seen-rows';

/**
 * The management data (organizations, users, keys, projects, invites, flags, cohort
 * definitions, event and property definitions, persons): in the DuckDB database beside the
 * events, or in PostgreSQL when `metaStore` names one (META_STORE), behind the same interfaces.
 */
export interface MetaStores {
  management: ManagementStore;
  invites: InviteStore;
  flags: FlagStore;
  cohorts: CohortStore;
  definitions: DefinitionsStore;
  persons: PersonStore;
  /** Persons are kept outside DuckDB: a project's are loaded into DuckDB's copy before SQL joins them. */
  personsElsewhere: boolean;
  /** Where the seen tracker writes definitions. */
  seenRows: SeenRows;
  /** Once the events are readable (cohort calculations read them): bring what is copied beside them up to date. */
  start(): Promise<void>;
  /** Another server process changed organizations, users, keys or projects: drop what is cached of them. */
  onManagementChange(listener: () => void): void;
  close(): Promise<void>;
}

/** `personMirror`: where persons are copied beside the events when another engine holds them (ClickHouse). */
export async function openMetaStores(
  db: Database,
  eventsSource: EventsSourceRef,
  options: { metaStore?: string; logger?: Logger; personMirror?: PersonMirror },
): Promise<MetaStores> {
  if (options.metaStore) return openPostgresMetaStores(options.metaStore, db, eventsSource, options.logger, options.personMirror);
  return {
    management: createManagementStore(db),
    invites: createInviteStore(db),
    flags: createFlagStore(db),
    cohorts: createCohortStore(db, eventsSource),
    definitions: createDefinitionsStore(db, eventsSource),
    persons: createPersonStore(db, undefined, options.personMirror),
    personsElsewhere: false,
    seenRows: createSeenRows(db),
    start: async () => undefined,
    // One process per DuckDB file: nobody else changes it.
    onManagementChange: () => undefined,
    close: async () => undefined,
  };
}
