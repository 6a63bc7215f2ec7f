import { assembleStatement, compileStatement, type CompiledStatement } from '../../core/query';
import type { Deps } from '../../deps';
import { eventsWithPersons, personsRelation, type Project } from '../../storage';
import { selectValue } from '../events/event-object';
import { asEvents } from '../events/queries';
import { QueryRunner } from '../events/runner';
import { runEventsQuery, type EventsQueryBody } from './events-query';

/** PostHog's default for a HogQL query without LIMIT (DEFAULT_RETURNED_ROWS). */
export const DEFAULT_QUERY_LIMIT = 100;

export interface QueryInput {
  query: { kind: 'HogQLQuery'; query: string; values?: Record<string, unknown> } | EventsQueryBody;
}

/**
 * The query endpoint: a HogQL statement or an EventsQuery compiled (a 400 with its position
 * before anything is read), then run on the project's events or persons relation through the
 * events module's runner (its time limit and error mapping), one row past the limit to tell
 * `hasMore`.
 */
export function createQueryService(deps: Deps) {
  const { persons } = deps.storage;
  const runner = () => new QueryRunner({ store: () => deps.storage.events, timeoutMs: deps.config.QUERY_TIMEOUT_MS, querySeconds: deps.metrics.querySeconds });

  /** The rows of a compiled statement, `limit + 1` of them at most, read as of every acknowledged event. */
  async function rows(teamId: number, compiled: CompiledStatement, limit: number, offset: number) {
    // As the events list: what every acknowledged capture request of the project brought, persons included.
    await deps.storage.events.awaitIntake(teamId, null);
    if (compiled.readsPersons || compiled.table === 'persons') {
      await persons.ensureLoaded(teamId);
      await persons.flush();
    }
    const run = runner();
    const relation = compiled.table === 'persons' ? personsRelation(teamId, { distinctIds: compiled.readsDistinctIds }) : await eventsRelation(run, teamId, compiled.readsPersons);
    return run.rows(assembleStatement(compiled, { relation, teamId, limit: limit + 1, offset }), 'query');
  }

  const capped = (limit: number | null) => Math.min(limit ?? DEFAULT_QUERY_LIMIT, deps.config.QUERY_MAX_ROWS);

  return {
    async run(project: Project, input: QueryInput) {
      const query = input.query;
      if (query.kind === 'EventsQuery') return runEventsQuery(deps, project, query, { rows, capped });
      const compiled = compileStatement(query.query, query.values, deps.now());
      const limit = capped(compiled.limit);
      const offset = compiled.offset ?? 0;
      const found = await rows(project.id, compiled, limit, offset);
      return {
        columns: compiled.columns,
        types: compiled.columns.map((column, i) => [column, compiled.types[i]!] as [string, string]),
        results: found.slice(0, limit).map((row) => compiled.aliases.map((alias, i) => selectValue(row[alias], compiled.types[i]!))),
        hasMore: found.length > limit,
        limit,
        offset,
        hogql: query.query,
        is_cached: false,
      };
    },
  };
}

export type StatementRows = (teamId: number, compiled: CompiledStatement, limit: number, offset: number) => ReturnType<QueryRunner['rows']>;

async function eventsRelation(runner: QueryRunner, teamId: number, withPersons: boolean): Promise<string> {
  const events = (await runner.relation(teamId)).sql;
  return asEvents(withPersons ? eventsWithPersons(events, teamId) : events);
}
