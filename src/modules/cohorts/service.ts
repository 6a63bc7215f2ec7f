import { parseCohortCsv } from '../../core/cohorts/csv';
import { cohortDefinition, filtersRepresentation } from '../../core/cohorts/definition';
import { normalizeLegacyGroups } from '../../core/cohorts/legacy-groups';
import { referencedCohorts } from '../../core/cohorts/types';
import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import type { Cohort, CohortInput, Principal } from '../../storage';
import { loadEmbeddedUsers } from '../invites/embedded-user';

export interface CohortRequest {
  name?: string | null;
  description?: string;
  groups?: unknown;
  filters?: unknown;
  deleted?: boolean;
  is_static?: boolean;
  csv?: File;
  _create_static_person_ids?: string[];
}

const notFound = () => new AppError('not_found', 'Not found.');

/** Ids are integers; anything else cannot name a cohort. */
export async function findCohort(deps: Deps, teamId: number, idParam: string): Promise<Cohort> {
  const cohort = /^\d{1,9}$/.test(idParam) ? await deps.storage.cohorts.getCohort(teamId, Number(idParam)) : null;
  if (!cohort) throw notFound();
  return cohort;
}

/** Multipart uploads carry `filters` and `groups` as JSON text. */
function jsonField(value: unknown, attr: string): unknown {
  if (typeof value !== 'string') return value;
  try {
    return value.trim() ? JSON.parse(value) : null;
  } catch {
    throw new AppError('invalid_input', 'Value must be valid JSON.', attr);
  }
}

function toInput(body: CohortRequest): CohortInput {
  const filters = jsonField(body.filters, 'filters');
  if (filters !== undefined && filters !== null && (typeof filters !== 'object' || Array.isArray(filters))) {
    throw new AppError('invalid_input', "Must contain a 'properties' key with type and values", 'filters');
  }
  const groups = jsonField(body.groups, 'groups');
  return {
    name: body.name,
    description: body.description,
    groups: groups === undefined ? undefined : normalizeLegacyGroups(groups),
    filters: filters as Record<string, unknown> | null | undefined,
    deleted: body.deleted,
    isStatic: body.is_static,
  };
}

/** A dynamic definition must compile, name only cohorts of the project, and not loop back. */
async function checkDefinition(deps: Deps, teamId: number, self: number | null, filters: unknown, groups: unknown) {
  const seen = new Set<number>();
  const visit = async (definition: ReturnType<typeof cohortDefinition>): Promise<void> => {
    for (const id of referencedCohorts(definition)) {
      if (id === self) throw new AppError('invalid_input', 'Cohorts cannot reference other cohorts in a loop.', 'filters');
      if (seen.has(id)) continue;
      seen.add(id);
      const referenced = await deps.storage.cohorts.getCohort(teamId, id);
      if (!referenced) throw new AppError('invalid_input', 'Invalid Cohort ID in filter', 'filters');
      if (!referenced.isStatic) await visit(cohortDefinition(referenced.filters, referenced.groups));
    }
  };
  await visit(cohortDefinition(filters, groups));
}

/** Parse an uploaded CSV before anything is written, so a bad file changes nothing. */
const readCsv = async (file: File | undefined) => (file ? parseCohortCsv(await file.text()) : null);

export async function createCohort(deps: Deps, principal: Principal, teamId: number, body: CohortRequest): Promise<Cohort> {
  const input = toInput(body);
  const csv = input.isStatic ? await readCsv(body.csv) : null;
  if (!input.isStatic) await checkDefinition(deps, teamId, null, input.filters, input.groups);
  const { cohorts } = deps.storage;
  const now = deps.now();
  const cohort = await cohorts.createCohort(teamId, input, principal.user.id, now);
  if (!cohort.isStatic) {
    void cohorts.scheduleCalculation(cohort.id, now);
    return cohort;
  }
  if (body._create_static_person_ids?.length) await cohorts.addStaticPersons(teamId, cohort.id, 'person_id', body._create_static_person_ids, now);
  if (csv) await cohorts.addStaticPersons(teamId, cohort.id, csv.kind, csv.ids, now);
  return (await cohorts.getCohort(teamId, cohort.id))!;
}

export async function updateCohort(deps: Deps, cohort: Cohort, body: CohortRequest): Promise<Cohort> {
  const input = toInput(body);
  const isStatic = input.isStatic ?? cohort.isStatic;
  const csv = isStatic ? await readCsv(body.csv) : null;
  if (!isStatic) {
    await checkDefinition(deps, cohort.teamId, cohort.id, input.filters === undefined ? cohort.filters : input.filters, input.groups ?? cohort.groups);
  }
  const { cohorts } = deps.storage;
  const now = deps.now();
  const updated = await cohorts.updateCohort(cohort.teamId, cohort.id, input);
  if (updated.deleted) return updated;
  if (!updated.isStatic) {
    // Calculating from now on, whatever a calculation that just finished wrote.
    void cohorts.scheduleCalculation(updated.id, now);
    return { ...updated, isCalculating: true };
  }
  if (!csv) return updated;
  await cohorts.addStaticPersons(cohort.teamId, cohort.id, csv.kind, csv.ids, now);
  return (await cohorts.getCohort(cohort.teamId, cohort.id))!;
}

export async function toCohortBodies(deps: Deps, cohorts: Cohort[]) {
  const creators = await loadEmbeddedUsers(deps, cohorts.map((c) => c.createdBy));
  return cohorts.map((c) => ({
    id: c.id,
    name: c.name,
    description: c.description,
    groups: c.groups as Array<Record<string, unknown>>,
    deleted: c.deleted,
    filters: filtersRepresentation(c.filters, c.groups),
    query: null,
    is_calculating: c.isCalculating,
    created_by: (c.createdBy !== null && creators.get(c.createdBy)) || null,
    created_at: c.createdAt.toISOString(),
    last_calculation: c.lastCalculation?.toISOString() ?? null,
    errors_calculating: c.errorsCalculating,
    count: c.count,
    is_static: c.isStatic,
  }));
}

export const toCohortBody = async (deps: Deps, cohort: Cohort) => (await toCohortBodies(deps, [cohort]))[0];
