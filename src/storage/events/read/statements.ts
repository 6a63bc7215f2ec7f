import { assembleStatement, type CompiledStatement } from '../../../core/query';
import type { Row } from '../../db';
import type { PersonStore } from '../../persons/types';
import type { QueryRunner } from './runner';
import type { EventStore } from '../types';

/**
 * A compiled HogQL statement (a HogQL query, or the statement an EventsQuery compiles to, for the
 * runner's dialect) run
 * over one project's events or persons: storage picks the relation (the events, with their
 * persons joined when the statement reads them; the persons, with their distinct ids when it
 * reads those), scopes it to the project outside the statement, and runs it under the request's
 * runner (time limit, one wait for just-acknowledged events). As the events list: every
 * acknowledged capture request of the project is in, persons included. `limit` rows at most.
 */
export async function statementRows(
  stores: { events: EventStore; persons: PersonStore },
  runner: QueryRunner,
  teamId: number,
  compiled: CompiledStatement,
  page: { limit: number; offset: number },
): Promise<Row[]> {
  await stores.events.awaitIntake(teamId, null);
  if (compiled.readsPersons || compiled.table === 'persons') {
    await stores.persons.ensureLoaded(teamId);
    await stores.persons.flush();
  }
  let relation: string;
  if (compiled.table === 'persons') relation = runner.persons(teamId, { distinctIds: compiled.readsDistinctIds });
  else {
    const events = (await runner.relation(teamId)).sql;
    relation = `${compiled.readsPersons ? runner.withPersons(events, teamId) : events} AS events`;
  }
  return runner.rows(assembleStatement(compiled, { relation, teamId, limit: page.limit, offset: page.offset, dialect: runner.dialect }), 'query');
}
