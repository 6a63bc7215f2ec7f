import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileCohortQuery, type CohortRelations } from '../../../src/storage/cohorts/compile-cohort';

/** The fixture's tables, named as storage names its own. */
const RELATIONS: CohortRelations = { persons: 'persons', distinctIds: 'person_distinct_ids', members: 'cohort_people', cohorts: 'cohorts' };
import type { CohortGroup, SqlFragment } from '../../../src/core/cohorts/types';
import { openDatabase, type Database } from '../../../src/storage/db';
import { migrate } from '../../../src/storage/migrations';

/**
 * A real DuckDB with the service's schema, a few persons in two projects, a temp events table,
 * and a cohort (id 99) whose current members are bob. Compiled cohort queries run against it.
 */

export const TEAM = 1;
export const OTHER_TEAM = 2;
export const NOW = new Date('2024-03-01T00:00:00.000Z');
const DAY = 86_400_000;
const ago = (days: number) => new Date(NOW.getTime() - days * DAY).toISOString();

export const PERSONS: Array<[team: number, label: string, ids: string[], properties: Record<string, unknown>]> = [
  [
    TEAM,
    'alice',
    ['alice', 'anon-1'],
    { email: 'alice@example.com', name: 'Alice', age: 31, plan: 'pro', beta: true, signup: '2024-01-10T00:00:00Z', 'a/b': 'slash', $browser: 'Chrome', 'x~y': 'tilde' },
  ],
  [TEAM, 'bob', ['bob'], { email: 'bob@test.org', age: '25', plan: 'free', beta: 'false', signup: '2023-06-01' }],
  [TEAM, 'carol', ['carol'], { email: 'carol@example.com', age: 40, plan: null, signup: 1700000000 }],
  [TEAM, 'dave', ['dave'], {}],
  [OTHER_TEAM, 'eve', ['eve'], { email: 'eve@example.com', plan: 'pro', age: 50 }],
];

export const EVENTS: Array<[team: number, event: string, distinctId: string, timestamp: string, properties: Record<string, unknown>]> = [
  [TEAM, '$pageview', 'alice', ago(1), { $current_url: 'https://a.com/x' }],
  [TEAM, '$pageview', 'anon-1', ago(2), {}],
  [TEAM, '$pageview', 'alice', ago(3), {}],
  [TEAM, '$pageview', 'bob', ago(20), {}],
  [TEAM, 'purchase', 'carol', ago(5), { amount: 50 }],
  [TEAM, '$pageview', 'dave', ago(40), {}],
  [TEAM, '$pageview', 'dave', ago(-1), {}],
  [OTHER_TEAM, '$pageview', 'eve', ago(1), {}],
];

export interface Fixture {
  db: Database;
  /** person uuid → label */
  labels: Map<string, string>;
  events: SqlFragment;
  /** The labels of the persons a definition matches, sorted. */
  members(definition: CohortGroup, teamId?: number): Promise<string[]>;
  close(): Promise<void>;
}

export async function openFixture(): Promise<Fixture> {
  const dir = await mkdtemp(join(tmpdir(), 'cohort-core-'));
  const db = await openDatabase(join(dir, 'db.duckdb'));
  await migrate(db);
  const labels = new Map<string, string>();
  let id = 1;
  for (const [team, label, ids, properties] of PERSONS) {
    const uuid = crypto.randomUUID();
    labels.set(uuid, label);
    await db.run('INSERT INTO persons (id, uuid, team_id, properties, created_at) VALUES (?, ?, ?, ?, ?)', [id++, uuid, team, JSON.stringify(properties), NOW]);
    for (const distinctId of ids) await db.run('INSERT INTO person_distinct_ids VALUES (?, ?, ?)', [team, distinctId, uuid]);
  }
  await db.run('CREATE TABLE test_events (team_id INTEGER, event VARCHAR, distinct_id VARCHAR, timestamp TIMESTAMP, properties JSON)');
  for (const [team, event, distinctId, timestamp, properties] of EVENTS) {
    await db.run('INSERT INTO test_events VALUES (?, ?, ?, CAST(? AS TIMESTAMP), ?)', [team, event, distinctId, timestamp, JSON.stringify(properties)]);
  }
  const bob = [...labels].find(([, label]) => label === 'bob')![0];
  await db.run(`INSERT INTO cohorts (id, team_id, name, created_at, version) VALUES (99, ?, 'bobs', ?, 2)`, [TEAM, NOW]);
  await db.run('INSERT INTO cohort_people VALUES (99, ?, 2)', [bob]);
  // An older version's row must not count.
  await db.run('INSERT INTO cohort_people VALUES (99, ?, 1)', [[...labels.keys()][0]]);
  const events: SqlFragment = { sql: '(SELECT * FROM test_events WHERE team_id = ?)', params: [TEAM] };
  return {
    db,
    labels,
    events,
    async members(definition, teamId = TEAM) {
      const query = compileCohortQuery(definition, { relations: RELATIONS, teamId, now: NOW, events: { ...events, params: [teamId] } });
      const rows = await db.query<{ person_uuid: string }>(`SELECT person_uuid::VARCHAR AS person_uuid FROM (${query.sql})`, query.params);
      return rows.map((r) => labels.get(r.person_uuid)!).sort();
    },
    async close() {
      await db.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
