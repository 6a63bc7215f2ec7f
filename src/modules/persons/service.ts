import { personDisplayName } from '../../core/cohorts/person-view';
import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import { normalizeUuid } from '../../core/ids/uuid';
import type { Person, PersonStore, Project } from '../../storage';
import { forgetDistinctIds } from '../decide/result-memo';

/** The project's persons as of every event acknowledged so far (read-your-writes, as the events list). */
export async function loadPersons(deps: Deps, teamId: number) {
  await deps.storage.events.awaitIntake(teamId, null);
  await deps.storage.persons.ensureLoaded(teamId);
}

/**
 * A person by PostHog's integer id or by uuid (in any form `normalizeUuid` takes): the persons
 * API's `:id` and the events list's `person_id`. Null for anything else, or another project's
 * person. The project must be loaded (`loadPersons`).
 */
export function lookupPerson(persons: PersonStore, teamId: number, ref: string): Person | null {
  if (/^\d{1,15}$/.test(ref)) return persons.findById(teamId, Number(ref));
  const uuid = normalizeUuid(ref);
  return uuid ? persons.findByUuid(teamId, uuid) : null;
}

/** By integer id or uuid; anything else, or another project's person, is a 404. */
export async function findPerson(deps: Deps, teamId: number, idParam: string): Promise<Person> {
  await loadPersons(deps, teamId);
  const person = lookupPerson(deps.storage.persons, teamId, idParam);
  if (!person) throw new AppError('not_found', 'Not found.');
  return person;
}

export const toPersonBody = (project: Project, person: Person) => {
  const view = { ...person, createdAt: new Date(person.createdAt), distinctIds: [...person.distinctIds].sort() };
  return {
    id: person.id,
    uuid: person.uuid,
    name: personDisplayName(view, project.settings.person_display_name_properties),
    distinct_ids: view.distinctIds,
    properties: person.properties,
    created_at: view.createdAt.toISOString(),
    is_identified: person.isIdentified,
  };
};

/** `?delete_events` as PostHog reads it (present: true), except that a false value says false. */
export const wantsEvents = (value: string | undefined): boolean => value !== undefined && !/^(false|0)$/i.test(value);

/**
 * Delete the person (and with `deleteEvents` their events, from every tier or ClickHouse: storage/erasure.ts),
 * then what the flag checks remember of their distinct ids. A person deleted meanwhile by
 * another request is a 404, as it is to everyone after.
 */
export async function deletePerson(deps: Deps, teamId: number, person: Person, deleteEvents: boolean): Promise<void> {
  // Before anything is deleted: where the events cannot be erased yet (a node, a sharded ClickHouse table), nothing is.
  if (deleteEvents) deps.storage.eventReads.requireFeature('event_erasure');
  const done = await deps.storage.deletePerson(teamId, person.uuid, { deleteEvents });
  if (!done) throw new AppError('not_found', 'Not found.');
  forgetDistinctIds(done.distinctIds);
}
