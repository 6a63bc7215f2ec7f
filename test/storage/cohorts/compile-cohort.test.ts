import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { compileCohortQuery, type CohortRelations } from '../../../src/storage/cohorts/compile-cohort';

/** The fixture's tables, named as storage names its own. */
const RELATIONS: CohortRelations = { persons: 'persons', distinctIds: 'person_distinct_ids', members: 'cohort_people', cohorts: 'cohorts' };
import { jsonPointer } from '../../../src/core/cohorts/compile-property';
import { cohortDefinition } from '../../../src/core/cohorts/definition';
import { parseFilters } from '../../../src/core/cohorts/parse-definition';
import { all, BEHAVIOUR_CASES, PERSON_CASES, performed, person } from './cases';
import { NOW, OTHER_TEAM, TEAM, openFixture, type Fixture } from './fixture';

let fx: Fixture;
beforeAll(async () => {
  fx = await openFixture();
});
afterAll(() => fx.close());

describe('compiled SQL', () => {
  test('a person property: bound JSON-pointer path and values, scope outside the definition', () => {
    expect(compileCohortQuery(all(person('email', 'exact', 'A@x.com')), { relations: RELATIONS, teamId: 7, now: NOW })).toEqual({
      sql:
        'SELECT p.uuid AS person_uuid FROM persons p WHERE p.team_id = ? AND ((json_exists(p.properties, ?) AND ' +
        "coalesce(lower(coalesce(json_extract_string(p.properties, ?), 'null')) IN (?), false)))",
      params: [7, '/email', '/email', 'a@x.com'],
    });
  });

  test('a behavioural condition reads the events relation once, through a CTE', () => {
    const events = { sql: '(SELECT * FROM ev WHERE team_id = ?)', params: [7] };
    expect(compileCohortQuery(all(performed('$pageview', 7)), { relations: RELATIONS, teamId: 7, now: NOW, events })).toEqual({
      sql:
        'WITH cohort_events AS (SELECT team_id, event, distinct_id, timestamp, properties FROM (SELECT * FROM ev WHERE team_id = ?) AS ev WHERE team_id = ?) ' +
        'SELECT p.uuid AS person_uuid FROM persons p WHERE p.team_id = ? AND (p.uuid IN (SELECT pdi.person_uuid FROM cohort_events e JOIN person_distinct_ids pdi ' +
        'ON pdi.team_id = ? AND pdi.distinct_id = e.distinct_id WHERE e.event = ? AND e.timestamp >= CAST(? AS TIMESTAMP) AND e.timestamp <= CAST(? AS TIMESTAMP)))',
      params: [7, 7, 7, 7, '$pageview', '2024-02-23T00:00:00.000Z', NOW.toISOString()],
    });
  });

  test('a behavioural condition without an events relation cannot be calculated', () => {
    expect(() => compileCohortQuery(all(performed('$pageview', 7)), { relations: RELATIONS, teamId: 1, now: NOW })).toThrow('Events are not available');
  });

  test.each([
    ['email', '/email'],
    ['$browser', '/$browser'],
    ['a/b', '/a~1b'],
    ['x~y', '/x~0y'],
    ['~/', '/~0~1'],
  ])('key %j is the pointer %j', (key, pointer) => {
    expect(jsonPointer(key)).toBe(pointer);
  });
});

describe('person properties against DuckDB', () => {
  test.each(PERSON_CASES)('%s', async (_, filter, expected) => {
    expect(await fx.members(all(filter))).toEqual(expected);
  });

  test('AND inside OR', async () => {
    const definition = parseFilters({
      properties: {
        type: 'OR',
        values: [
          { type: 'AND', values: [person('email', 'icontains', 'example'), person('age', 'gt', 35)] },
          { type: 'AND', values: [person('plan', 'exact', 'free')] },
        ],
      },
    });
    expect(await fx.members(definition)).toEqual(['bob', 'carol']);
  });

  test('an empty definition is every person of the project, and only of the project', async () => {
    expect(await fx.members(parseFilters({ properties: {} }))).toEqual(['alice', 'bob', 'carol', 'dave']);
    expect(await fx.members(all(person('plan', 'exact', 'pro')), OTHER_TEAM)).toEqual(['eve']);
  });
});

describe('behaviour and cohort references against DuckDB', () => {
  test.each(BEHAVIOUR_CASES)('performed event %s', async (_, filter, expected) => {
    expect(await fx.members(all(filter))).toEqual(expected);
  });

  test('another cohort: its current version only', async () => {
    expect(await fx.members(all({ type: 'cohort', key: 'id', value: 99 }))).toEqual(['bob']);
    expect(await fx.members(all({ type: 'cohort', key: 'id', value: '99', negation: true }))).toEqual(['alice', 'carol', 'dave']);
    expect(await fx.members(all({ type: 'cohort', key: 'id', value: 99 }), OTHER_TEAM)).toEqual([]);
  });

  test('legacy groups: properties, old-style maps and performed events, OR-ed', async () => {
    const groups = [{ properties: [{ key: 'email', value: 'bob@test.org', type: 'person' }] }, { event_id: 'purchase', days: 7 }];
    expect(await fx.members(cohortDefinition(null, groups))).toEqual(['bob', 'carol']);
    expect(await fx.members(cohortDefinition({}, [{ properties: { plan: 'pro' } }]))).toEqual(['alice']);
    expect(await fx.members(cohortDefinition(null, [{ event_id: '$pageview', days: 30, count: 2, count_operator: 'gte' }]))).toEqual(['alice']);
  });
});

describe('injection probes never reach the SQL text', () => {
  const probes = ["x' OR 1=1 --", "') OR TRUE --", '$.email', '"; DROP TABLE persons; --', "\\' UNION SELECT uuid FROM persons --"];

  test.each(probes)('%j as key, value and event name', async (probe) => {
    const filters = [person(probe, 'exact', 'alice@example.com'), person('email', 'exact', probe), performed(probe, 30)];
    for (const filter of filters) {
      const definition = all(filter);
      const query = compileCohortQuery(definition, { relations: RELATIONS, teamId: TEAM, now: NOW, events: fx.events });
      expect(query.sql).not.toContain(probe);
      expect(await fx.members(definition)).toEqual([]);
    }
    const [{ n }] = await fx.db.query<{ n: number }>('SELECT count(*) AS n FROM persons');
    expect(n).toBe(5);
  });
});
