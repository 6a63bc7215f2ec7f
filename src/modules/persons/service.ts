import { personDisplayName } from '../../core/cohorts/person-view';
import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import type { Person, Project } from '../../storage';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The project's persons as of every event acknowledged so far (read-your-writes, as the events list). */
export async function loadPersons(deps: Deps, teamId: number) {
  await deps.storage.events.awaitIntake(teamId, null);
  await deps.storage.persons.ensureLoaded(teamId);
}

/** By integer id or uuid; anything else, or another project's person, is a 404. */
export async function findPerson(deps: Deps, teamId: number, idParam: string): Promise<Person> {
  await loadPersons(deps, teamId);
  const { persons } = deps.storage;
  const person = /^\d{1,15}$/.test(idParam)
    ? persons.findById(teamId, Number(idParam))
    : UUID.test(idParam)
      ? persons.findByUuid(teamId, idParam.toLowerCase())
      : null;
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
