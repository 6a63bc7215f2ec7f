import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { CLICKHOUSE_18 } from '../../../src/core/query';
import { CLICKHOUSE_SKIP_REASON, clickhouseServerAvailable, startClickHouseServer, type ClickHouseServer } from '../../helpers/clickhouse';
import { all, PERSON_CASES } from './cases';
import { cohortFixtureStatements, membersQuery } from './clickhouse-fixture';
import { OTHER_TEAM } from './fixture';

/**
 * Person conditions in the 18.16 spelling on the Debian 18.16 server: the persons DuckDB gives.
 * Not here: behavioural conditions (they read events through a CTE, which 18.16 lacks) and cohort
 * references (18.16 fails their `JOIN … ON a AND b` inside `IN (…)`: "Size of filter doesn't
 * match size of column"); both are the shape of the cohort query, which storage will own.
 */
let server: ClickHouseServer;

async function members(definition: Parameters<typeof membersQuery>[1], teamId?: number): Promise<string[]> {
  const text = await server.query(`${membersQuery(CLICKHOUSE_18, definition, teamId).sql} FORMAT JSONEachRow`);
  return text.split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { person_uuid: string }).person_uuid);
}

describe.skipIf(!clickhouseServerAvailable)(`ClickHouse 18.16 server: the persons DuckDB gives${clickhouseServerAvailable ? '' : ` (skipped: ${CLICKHOUSE_SKIP_REASON})`}`, () => {
  beforeAll(async () => {
    server = await startClickHouseServer();
    for (const statement of cohortFixtureStatements("DateTime('UTC')")) await server.query(statement);
  });
  afterAll(() => server?.stop());

  test.each(PERSON_CASES)('%s', async (_case, filter, expected) => {
    expect(await members(all(filter))).toEqual(expected);
  });

  test('another project', async () => {
    expect(await members(all({ type: 'person', key: 'plan', operator: 'exact', value: 'pro', negation: false }), OTHER_TEAM)).toEqual(['eve']);
  });
});
