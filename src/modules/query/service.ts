import { assembleStatement, compileStatement } from '../../core/query';
import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import { selectValue } from '../events/event-object';
import { eventsWithPersons, personsRelation } from '../../storage';
import { asEvents } from '../events/queries';
import { QueryRunner } from '../events/runner';

/** PostHog's default for a HogQL query without LIMIT (DEFAULT_RETURNED_ROWS). */
export const DEFAULT_QUERY_LIMIT = 100;

export interface QueryInput {
  query: { kind: string; query: string; values?: Record<string, unknown> };
}

/**
 * The query endpoint: a HogQL statement compiled (a 400 with its position before anything is
 * read), then run on the project's events or persons relation through the events module's
 * runner (its time limit and error mapping), one row past the limit to tell `hasMore`.
 */
export function createQueryService(deps: Deps) {
  const { persons } = deps.storage;
  return {
    async run(teamId: number, input: QueryInput) {
      const { kind, query, values } = input.query;
      if (kind !== 'HogQLQuery') throw new AppError('invalid_input', `Unsupported query kind: ${String(kind).slice(0, 100)}`, 'kind');
      const compiled = compileStatement(query, values, deps.now());
      const limit = Math.min(compiled.limit ?? DEFAULT_QUERY_LIMIT, deps.config.QUERY_MAX_ROWS);
      const offset = compiled.offset ?? 0;
      // As the events list: what every acknowledged capture request of the project brought, persons included.
      await deps.storage.events.awaitIntake(teamId, null);
      if (compiled.readsPersons || compiled.table === 'persons') {
        await persons.ensureLoaded(teamId);
        await persons.flush();
      }
      const runner = new QueryRunner({ store: () => deps.storage.events, timeoutMs: deps.config.QUERY_TIMEOUT_MS, querySeconds: deps.metrics.querySeconds });
      const relation = compiled.table === 'persons' ? personsRelation(teamId, { distinctIds: compiled.readsDistinctIds }) : await eventsRelation(runner, teamId, compiled.readsPersons);
      const rows = await runner.rows(assembleStatement(compiled, { relation, teamId, limit: limit + 1, offset }), 'query');
      return {
        columns: compiled.columns,
        types: compiled.columns.map((column, i) => [column, compiled.types[i]!] as [string, string]),
        results: rows.slice(0, limit).map((row) => compiled.aliases.map((alias, i) => selectValue(row[alias], compiled.types[i]!))),
        hasMore: rows.length > limit,
        limit,
        offset,
        hogql: query,
        is_cached: false,
      };
    },
  };
}

async function eventsRelation(runner: QueryRunner, teamId: number, withPersons: boolean): Promise<string> {
  const events = (await runner.relation(teamId)).sql;
  return asEvents(withPersons ? eventsWithPersons(events, teamId) : events);
}
