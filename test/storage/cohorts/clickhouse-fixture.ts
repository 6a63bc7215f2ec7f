import { compileCohortQuery, type CohortRelations } from '../../../src/storage/cohorts/compile-cohort';

/** The fixture's tables, named as storage names its own. */
const RELATIONS: CohortRelations = { persons: 'persons', distinctIds: 'person_distinct_ids', members: 'cohort_people', cohorts: 'cohorts' };
import type { CohortGroup } from '../../../src/core/cohorts/types';
import { sql, type Dialect } from '../../../src/core/query';
import { EVENTS, NOW, PERSONS, TEAM } from './fixture';

/** The persons, distinct ids, events and cohort 99 of fixture.ts; a person's uuid is their label, so answers read directly. */
export function cohortFixtureStatements(time: string): string[] {
  const insert = (table: string, rows: object[]) => `INSERT INTO ${table} FORMAT JSONEachRow ${rows.map((r) => JSON.stringify(r)).join('\n')}`;
  return [
    `CREATE TABLE persons (id Int64, uuid String, team_id Int64, properties String, created_at ${time}) ENGINE = Memory`,
    'CREATE TABLE person_distinct_ids (team_id Int64, distinct_id String, person_uuid String) ENGINE = Memory',
    `CREATE TABLE test_events (team_id Int64, event String, distinct_id String, timestamp ${time}, properties String) ENGINE = Memory`,
    'CREATE TABLE cohorts (id Int64, team_id Int64, version Int64) ENGINE = Memory',
    'CREATE TABLE cohort_people (cohort_id Int64, person_uuid String, version Int64) ENGINE = Memory',
    insert('persons', PERSONS.map(([team, label, , properties], i) => ({ id: i + 1, uuid: label, team_id: team, properties: JSON.stringify(properties), created_at: '2024-03-01 00:00:00' }))),
    insert('person_distinct_ids', PERSONS.flatMap(([team, label, ids]) => ids.map((id) => ({ team_id: team, distinct_id: id, person_uuid: label })))),
    insert('test_events', EVENTS.map(([team, event, distinctId, timestamp, properties]) => ({
      team_id: team, event, distinct_id: distinctId, timestamp: timestamp.slice(0, 19).replace('T', ' '), properties: JSON.stringify(properties),
    }))),
    // As in fixture.ts: cohort 99's current version (2) holds bob; an older version's row must not count.
    insert('cohorts', [{ id: 99, team_id: TEAM, version: 2 }]),
    insert('cohort_people', [{ cohort_id: 99, person_uuid: 'bob', version: 2 }, { cohort_id: 99, person_uuid: 'alice', version: 1 }]),
  ];
}

/** The statement listing a definition's members, rendered, ordered by label. */
export function membersQuery(d: Dialect, definition: CohortGroup, teamId = TEAM) {
  const events = sql`(SELECT * FROM test_events WHERE team_id = ${d.bind(teamId)})`;
  const query = d.render(compileCohortQuery(definition, { relations: RELATIONS, teamId, now: NOW, events, dialect: d }));
  return { sql: `SELECT person_uuid FROM (${query.sql}) ORDER BY person_uuid`, params: query.params };
}

