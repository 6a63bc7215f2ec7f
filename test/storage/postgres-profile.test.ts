import { describe, expect, test } from 'bun:test';
import { POSTGRES_SKIP_REASON, postgresAvailable } from '../helpers/postgres';
import { runProfile } from '../helpers/profile-run';

/**
 * The API suites that matter most for the management data, run once more with it in PostgreSQL
 * (META_STORE; events stay in DuckDB under DATA_DIR): the same tests, unchanged, must pass. They
 * run in a child `bun test` with HOGBASE_TEST_META_STORE=postgres, which test/helpers/test-app.ts
 * reads to give every app a new database. Tests about DuckDB's own files stay DuckDB-only.
 */
const SUITES = [
  'test/modules/projects.test.ts',
  'test/modules/users.test.ts',
  'test/modules/personal-api-keys.test.ts',
  'test/modules/invites.test.ts',
  'test/modules/feature-flags.test.ts',
  'test/modules/feature-flags-local-evaluation.test.ts',
  'test/modules/decide.test.ts',
  'test/modules/decide-persons.test.ts',
  'test/modules/cohorts.test.ts',
  'test/modules/cohorts-ingestion.test.ts',
  'test/modules/persons.test.ts',
  'test/modules/persons-delete.test.ts',
  'test/modules/event-definitions.test.ts',
  'test/modules/property-definitions.test.ts',
  'test/modules/events.test.ts',
  'test/modules/query.test.ts',
];

const run = postgresAvailable ? describe : describe.skip;

run(`API suites with META_STORE=postgres${postgresAvailable ? '' : ` (skipped: ${POSTGRES_SKIP_REASON})`}`, () => {
  test(`${SUITES.length} suites pass unchanged`, async () => {
    const { count } = await runProfile('PostgreSQL', SUITES, { HOGBASE_TEST_META_STORE: 'postgres' });
    expect(count('pass')).toBeGreaterThan(300);
  }, 600_000);
});
