import type { Dialect, SqlFragment } from '../../core/query';
import { normalizeUuid } from '../../core/ids/uuid';
import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import { personObject, toEventObject, type EventObject, type PersonObject } from './event-object';
import { FileCounts } from '../../storage/events/read/counts';
import { exportEvents, type ExportContext } from './export';
import { listEvents, selectEvents, type EventsPage, type SelectPage } from './list';
import { parseListRequest, type ListQueryInput } from './params';
import { lookupPerson } from '../persons/service';
import { distinctIdIn } from '../../storage/events/read/list-statements';
import { eventById, propertyValues } from '../../storage/events/read/lookups';
import { QueryRunner } from '../../storage/events/read/runner';

/** Values listed by `/events/values/` and the window they are read from (PostHog: recent values). */
export const VALUES_LIMIT = 100;
export const VALUES_WINDOW_MS = 7 * 86_400_000;
/** Most events `/values/` reads, so a busy project's answer stays quick. */
export const VALUES_SCAN_LIMIT = 500_000;
/** A UUIDv7 carries its creation time: `/events/:id/` looks this far around it first. */
const UUID_TIME_SLACK_MS = 86_400_000;

export interface ValuesInput {
  key?: string;
  value?: string;
  event_name?: string[];
}

/**
 * The stored-events API over the event store: lists (plain or `select`), exports, one event, and
 * property values. Everything that touches storage goes through `QueryRunner` (time limit, error
 * mapping) and the store's events relation; persons come from the in-memory person store.
 */
export function createEventsService(deps: Deps) {
  const newRunner = () => new QueryRunner({ store: () => deps.storage.eventReads, timeoutMs: deps.config.QUERY_TIMEOUT_MS, querySeconds: deps.metrics.querySeconds });
  const { persons } = deps.storage;
  const counts = new FileCounts();

  /** `now` is the request's one clock reading: the bounds it parsed and the SQL it compiles agree. */
  async function context(teamId: number, personId: string | undefined, now: Date): Promise<ExportContext> {
    // Persons as of every acknowledged capture request of the project (processed behind the 200).
    await deps.storage.events.awaitIntake(teamId, null);
    await persons.ensureLoaded(teamId);
    const cache = new Map<string, PersonObject | null>();
    const runner = newRunner();
    return {
      runner,
      teamId,
      now,
      logger: deps.logger,
      scratchDir: deps.storage.exportsDir,
      ...(deps.exportSlices ? { exportSlices: deps.exportSlices } : {}),
      ...(deps.memoryTight ? { memoryTight: deps.memoryTight } : {}),
      ...personFilter(teamId, personId, runner.dialect),
      counts,
      flushPersons: () => persons.flush(),
      async propertyTypes(kind, keys) {
        if (keys.length === 0) return new Map();
        // Definitions of every processed event (they are written behind ingestion, in batches).
        await deps.storage.seen.flush();
        const { results } = await deps.storage.definitions.listPropertyDefinitions(teamId, { kind, names: [...keys], limit: keys.length, offset: 0 });
        return new Map(results.flatMap((d) => (d.propertyType ? [[d.name, d.propertyType] as const] : [])));
      },
      personOf(distinctId) {
        let person = cache.get(distinctId);
        if (person === undefined) {
          const found = persons.findByDistinctId(teamId, distinctId);
          person = found ? personObject(found) : null;
          // Bounded: an export may meet millions of distinct ids.
          if (cache.size >= 100_000) cache.clear();
          cache.set(distinctId, person);
        }
        return person;
      },
    };
  }

  /** `person_id` (PostHog: the person's id or uuid) matches every distinct id of that person. */
  function personFilter(teamId: number, personId: string | undefined, dialect: Dialect): Pick<ExportContext, 'personFilter' | 'personDistinctIds'> {
    if (!personId) return { personFilter: null };
    const person = lookupPerson(persons, teamId, personId);
    if (!person || !person.distinctIds.length) return { personFilter: 'none' };
    return { personFilter: distinctIdIn(person.distinctIds, dialect), personDistinctIds: person.distinctIds };
  }

  function recordUsage(teamId: number, names: Array<string | undefined>) {
    const events = names.filter((n): n is string => !!n);
    if (!events.length) return;
    deps.storage.definitions
      .recordEventQueryUsage(teamId, events, deps.now())
      .catch((error) => deps.logger.warn('recording event query usage failed', { error }));
  }

  return {
    async list(teamId: number, query: ListQueryInput, requestUrl: string): Promise<EventsPage | SelectPage | Response> {
      const params = new URL(requestUrl).searchParams;
      const now = deps.now();
      const req = parseListRequest({ ...query, select: repeatable(params, 'select', query.select), where: repeatable(params, 'where', query.where) }, now, deps.config.QUERY_MAX_ROWS);
      const ctx = await context(teamId, query.person_id, now);
      recordUsage(teamId, [query.event]);
      if (req.format) {
        if (req.format === 'parquet') ctx.runner.requireFeature('parquet_exports');
        return exportEvents(ctx, req, req.format, requestUrl);
      }
      return req.select.length ? selectEvents(ctx, req, requestUrl) : listEvents(ctx, req, requestUrl);
    },

    async retrieve(teamId: number, id: string, includePerson: boolean): Promise<EventObject> {
      const uuid = normalizeUuid(id);
      if (!uuid) throw new AppError('invalid_input', 'Invalid UUID', 'id');
      const runner = newRunner();
      const find = (range?: { from: number; to: number }) => eventById(runner, teamId, uuid, range);
      const created = uuidV7Time(uuid);
      const row = (created !== null ? await find({ from: created - UUID_TIME_SLACK_MS, to: created + UUID_TIME_SLACK_MS }) : undefined) ?? (await find());
      if (!row) throw new AppError('not_found', `No events exist for event UUID ${uuid}`);
      let person: PersonObject | null = null;
      if (includePerson) {
        await persons.ensureLoaded(teamId);
        const found = persons.findByDistinctId(teamId, String(row.distinct_id));
        person = found ? personObject(found) : null;
      }
      return toEventObject(row, person);
    },

    async values(teamId: number, query: ValuesInput): Promise<Array<{ name: string }>> {
      if (!query.key) return [];
      const eventNames = (query.event_name ?? []).filter((e) => e !== '');
      recordUsage(teamId, eventNames);
      const now = deps.now().getTime();
      const values = await propertyValues(
        newRunner(),
        teamId,
        { key: query.key, value: query.value, eventNames, limit: VALUES_LIMIT, scanLimit: VALUES_SCAN_LIMIT },
        { from: now - VALUES_WINDOW_MS, to: now + 5_000 },
      );
      return values.map((name) => ({ name }));
    },
  };
}

export type EventsService = ReturnType<typeof createEventsService>;

/** `select`/`where` given more than once are one expression each (the query schema keeps the last). */
function repeatable(params: URLSearchParams, name: string, single: string | string[] | undefined): string | string[] | undefined {
  const all = params.getAll(name);
  return all.length > 1 ? all : single;
}

/** The creation time of a version-7 UUID (its first 48 bits), or null for other versions. */
export function uuidV7Time(uuid: string): number | null {
  if (uuid[14] !== '7') return null;
  return parseInt(uuid.slice(0, 8) + uuid.slice(9, 13), 16);
}
