import { csvLine } from '../../core/cohorts/csv';
import { personCsvHeader, personCsvRow, personDisplayName } from '../../core/cohorts/person-view';
import type { Deps } from '../../deps';
import { paginate, type Page } from '../../http/pagination';
import type { CohortPerson, Project } from '../../storage';

/** The cohort persons listing: a JSON page, or a CSV streamed batch by batch. */

const nameOf = (project: Project, person: CohortPerson) => personDisplayName(person, project.settings.person_display_name_properties);

export const toPersonBody = (project: Project, person: CohortPerson) => ({
  id: person.id,
  uuid: person.uuid,
  name: nameOf(project, person),
  distinct_ids: person.distinctIds,
  properties: person.properties,
  created_at: person.createdAt.toISOString(),
  is_identified: person.isIdentified,
});

export async function cohortPersonsPage(deps: Deps, project: Project, cohortId: number, page: Page, url: string) {
  const { count, results } = await deps.storage.cohorts.listCohortPersons(project.id, cohortId, page);
  return paginate(
    url,
    page,
    count,
    results.map((person) => toPersonBody(project, person)),
  );
}

/** Rows are produced as the client reads them, so an export of any size holds one batch. */
export async function cohortPersonsCsv(deps: Deps, project: Project, cohortId: number, page: Page | null): Promise<Response> {
  const { cohorts } = deps.storage;
  const shape = await cohorts.cohortPersonsShape(project.id, cohortId);
  const header = personCsvHeader(shape.propertyKeys, shape.maxDistinctIds);
  const batches: AsyncIterator<CohortPerson[]> = page
    ? (async function* () {
        yield (await cohorts.listCohortPersons(project.id, cohortId, page)).results;
      })()
    : cohorts.iterateCohortPersons(project.id, cohortId)[Symbol.asyncIterator]();
  const encoder = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(csvLine(header)));
    },
    async pull(controller) {
      const { done, value } = await batches.next();
      if (done) return controller.close();
      controller.enqueue(encoder.encode(value.map((person) => csvLine(personCsvRow(person, nameOf(project, person), header))).join('')));
    },
    async cancel() {
      await batches.return?.();
    },
  });
  return new Response(stream, {
    headers: {
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="cohort-${cohortId}-persons.csv"`,
    },
  });
}
