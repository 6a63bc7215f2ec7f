import { compileStatement, type CompiledStatement } from '../../core/query';
import type { Deps } from '../../deps';
import type { Project } from '../../storage';
import { selectValue } from '../events/event-object';
import { QueryRunner } from '../../storage/events/read/runner';
import { runEventsQuery, type EventsQueryBody } from './events-query';

/** PostHog's default for a HogQL query without LIMIT (DEFAULT_RETURNED_ROWS). */
export const DEFAULT_QUERY_LIMIT = 100;

export interface QueryInput {
  query: { kind: 'HogQLQuery'; query: string; values?: Record<string, unknown> } | EventsQueryBody;
}

/**
 * The query endpoint: a HogQL statement or an EventsQuery compiled for storage's engine (a 400
 * with its position before anything is read), then run by storage over the project's events or
 * persons under a runner (the time limit), one row past the limit to tell `hasMore`.
 */
export function createQueryService(deps: Deps) {
  const runner = () => new QueryRunner({ store: () => deps.storage.eventReads, timeoutMs: deps.config.QUERY_TIMEOUT_MS, querySeconds: deps.metrics.querySeconds });

  /** The rows of a compiled statement, `limit + 1` of them at most, read as of every acknowledged event. */
  const rows: StatementRows = (teamId, compiled, limit, offset) => deps.storage.statementRows(teamId, compiled, { limit: limit + 1, offset }, runner());

  const capped = (limit: number | null) => Math.min(limit ?? DEFAULT_QUERY_LIMIT, deps.config.QUERY_MAX_ROWS);

  return {
    async run(project: Project, input: QueryInput) {
      const query = input.query;
      if (query.kind === 'EventsQuery') return runEventsQuery(deps, project, query, { rows, capped });
      const compiled = compileStatement(query.query, query.values, deps.now(), deps.storage.eventReads.dialect);
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
