import { parseElementsChain } from '../../core/events/elements';
import { compileEventsQuery, STAR_FIELDS, type CompiledEventsQuery, type EventsQueryColumn } from '../../core/query';
import type { Deps } from '../../deps';
import type { Person, Project } from '../../storage';
import type { Row } from '../../storage/db';
import { isoTimestamp, parseProperties, selectValue } from '../events/event-object';
import { normalizeUuid } from '../../core/ids/uuid';
import type { StatementRows } from './service';

/** The EventsQuery body as validated (see model.ts). */
export interface EventsQueryBody {
  kind: 'EventsQuery';
  select: string[];
  where?: string[] | null;
  orderBy?: string[] | null;
  event?: string | null;
  events?: string[] | null;
  properties?: unknown;
  fixedProperties?: unknown;
  after?: string | null;
  before?: string | null;
  limit?: number | null;
  offset?: number | null;
  personId?: string | null;
  filterTestAccounts?: boolean | null;
  actionId?: number | null;
}

const DEFAULT_DISPLAY_NAME_PROPERTIES = ['email', 'name', 'username'];

/**
 * An EventsQuery, answered as PostHog's EventsQueryResponse: compiled with the project's display
 * name properties and the distinct ids of `personId`, run as a HogQL statement is, and each row
 * put together from its columns (`*` as the event object, `person` as the person object).
 */
export async function runEventsQuery(
  deps: Deps,
  project: Project,
  body: EventsQueryBody,
  run: { rows: StatementRows; capped: (limit: number | null) => number },
) {
  const teamId = project.id;
  await deps.storage.events.awaitIntake(teamId, null);
  await deps.storage.persons.ensureLoaded(teamId);
  const compiled = compileEventsQuery(body, deps.now(), {
    displayNameProperties: project.settings.person_display_name_properties ?? DEFAULT_DISPLAY_NAME_PROPERTIES,
    testAccountFilters: project.settings.test_account_filters,
    personDistinctIds: body.personId ? distinctIdsOf(deps, teamId, body.personId) : null,
  }, deps.storage.eventReads.dialect);
  const limit = run.capped(compiled.limit);
  const found = await run.rows(teamId, compiled.statement, limit, compiled.offset);
  const personOf = (distinctId: unknown) => deps.storage.persons.findByDistinctId(teamId, String(distinctId));
  return {
    columns: compiled.columns,
    types: compiled.types,
    results: found.slice(0, limit).map((row) => compiled.plan.map((column) => cell(compiled, column, row, teamId, personOf))),
    hasMore: found.length > limit,
    limit,
    offset: compiled.offset,
    hogql: compiled.hogql(limit, compiled.offset),
    is_cached: false,
  };
}

/** PostHog's `personId`: the person's id or uuid; an unknown one has no events. */
function distinctIdsOf(deps: Deps, teamId: number, personId: string): string[] {
  const uuid = normalizeUuid(personId);
  const person = uuid ? deps.storage.persons.findByUuid(teamId, uuid) : /^\d{1,15}$/.test(personId) ? deps.storage.persons.findById(teamId, Number(personId)) : null;
  return person ? [...person.distinctIds] : [];
}

function cell(compiled: CompiledEventsQuery, column: EventsQueryColumn, row: Row, teamId: number, personOf: (distinctId: unknown) => Person | null): unknown {
  const { aliases, types } = compiled.statement;
  const value = (index: number) => row[aliases[index]!];
  switch (column.kind) {
    case 'value':
      return selectValue(value(column.index), types[column.index]!);
    case 'event':
      return eventObject(Object.fromEntries(STAR_FIELDS.events.map((name, i) => [name, value(column.indexes[i]!)])), teamId);
    case 'person': {
      const person = personOf(value(column.index));
      const distinctId = String(value(column.index));
      return person ? { uuid: person.uuid, created_at: isoTimestamp(new Date(person.createdAt)), properties: person.properties, distinct_id: distinctId } : { distinct_id: distinctId };
    }
    case 'display_name': {
      const [name, distinctId] = column.indexes.map(value);
      return { display_name: name, id: personOf(distinctId)?.uuid ?? null, distinct_id: distinctId };
    }
  }
}

/** `*` as PostHog gives it: the stored event, its properties parsed, its elements when it has a chain. */
function eventObject(fields: Record<string, unknown>, teamId: number) {
  const properties = parseProperties(fields.properties);
  const chain = typeof fields.elements_chain === 'string' ? fields.elements_chain : '';
  return {
    uuid: fields.uuid,
    event: fields.event,
    properties,
    timestamp: isoTimestamp(fields.timestamp as Date),
    team_id: teamId,
    distinct_id: fields.distinct_id,
    elements_chain: chain,
    created_at: isoTimestamp(fields.created_at as Date),
    // PostHog's ingestion marks events that asked for no person profile so.
    person_mode: properties.$process_person_profile === false ? 'propertyless' : 'full',
    ...(chain ? { elements: parseElementsChain(chain) } : {}),
  };
}
