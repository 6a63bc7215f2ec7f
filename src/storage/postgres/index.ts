import type { Logger } from '../../logger';
import type { Database } from '../db';
import type { EventsSourceRef } from '../definitions/events-source';
import { createCachedFlagStore } from '../flags/flag-store';
import type { MetaStores } from '../meta';
import { createPersonStore } from '../persons/person-store';
import type { PersonMirror } from '../persons/types';
import { listenForChanges } from './changes';
import { openPg, redactUrl } from './client';
import { createPostgresCohortStore } from './cohort-store';
import { createPostgresDefinitionsStore } from './definitions-store';
import { createPostgresFlagRows } from './flag-rows';
import { createPostgresInviteStore } from './invite-store';
import { createPostgresManagementStore } from './management-store';
import { migratePostgres } from './migrate';
import { createPostgresPersonHome } from './person-home';
import { createPostgresSeenRows } from './seen-rows';

export { MetaStoreUnreachableError } from './client';

/**
 * The management stores over PostgreSQL (META_STORE): migrated on open, and listening for the
 * changes other server processes make, to drop what this one caches.
 */
export async function openPostgresMetaStores(url: string, db: Database, eventsSource: EventsSourceRef, logger?: Logger, personMirror?: PersonMirror): Promise<MetaStores> {
  const pg = await openPg(url);
  try {
    await migratePostgres(pg);
    const warn = (what: string) => (error: unknown) => logger?.warn(what, { error: String(error) });
    const changes = await listenForChanges(pg, warn('a change notification could not be read'));
    const flags = createCachedFlagStore(createPostgresFlagRows(pg, changes));
    changes.subscribe('flags', ({ teamId }) => teamId !== undefined && flags.forgetFlags(teamId));
    changes.subscribe('hash_keys', ({ teamId }) => teamId !== undefined && flags.forgetHashKeyOverrides(teamId));
    changes.onMissed(() => {
      logger?.warn('the management database connection that listens for changes was lost and is back: caches dropped', { store: redactUrl(url) });
      flags.forgetAll();
    });
    const cohorts = createPostgresCohortStore(pg, db, eventsSource, changes, warn('a cohort copy could not follow a change'));
    return {
      management: createPostgresManagementStore(pg, changes),
      invites: createPostgresInviteStore(pg),
      flags,
      cohorts,
      definitions: createPostgresDefinitionsStore(pg, db, eventsSource),
      persons: createPersonStore(db, createPostgresPersonHome(pg, changes, warn('person ids could not be reserved; new persons get provisional ones')), personMirror),
      personsElsewhere: true,
      seenRows: createPostgresSeenRows(pg),
      start: () => cohorts.resync(),
      onManagementChange(listener) {
        changes.subscribe('management', listener);
        changes.onMissed(listener);
      },
      close: () => pg.close(),
    };
  } catch (error) {
    await pg.close().catch(() => undefined);
    throw error;
  }
}
