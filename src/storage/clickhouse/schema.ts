import { sql, trusted, type ClickHouseFeatures } from '../../core/query';
import type { ClickHouse } from './client';
import { personsTablesDdl } from './persons-table';

/**
 * The events table, PostHog-like: one row per event, partitioned by month, ordered by project
 * then time, so a project's newest events are one range read backwards. ReplacingMergeTree with
 * the uuid in the key: the same row inserted twice (a load retried after a failure whose outcome
 * was unknown) is one row for every read (`FINAL`) and, after merges, on disk.
 * On a server without DateTime64 (18.16), `timestamp`/`created_at` hold the seconds and
 * `timestamp_ms`/`created_at_ms` the milliseconds.
 */
function eventsTableDdl(f: ClickHouseFeatures, table: string): string {
  const time = (name: string) => (f.datetime64 ? `${name} DateTime64(6, 'UTC')` : `${name} DateTime('UTC'), ${name}_ms UInt16`);
  return `CREATE TABLE IF NOT EXISTS ${table} (
    uuid UUID,
    team_id Int64,
    event String,
    distinct_id String,
    person_id Nullable(UUID),
    properties String,
    ${time('timestamp')},
    ${time('created_at')},
    elements_chain String,
    mat_browser Nullable(String),
    mat_os Nullable(String),
    mat_current_url Nullable(String),
    mat_session_id Nullable(String),
    _seg Int64
  ) ENGINE = ReplacingMergeTree
  PARTITION BY toYYYYMM(timestamp)
  ORDER BY (team_id, toDate(timestamp), timestamp, ${f.datetime64 ? '' : 'timestamp_ms, '}uuid)`;
}

/**
 * The cluster (the server's `remote_servers`) whose servers are the events' shards. When the
 * server names it, `events` is a Distributed table over each shard's `events_shard`, sharded by
 * distinct id: one person's events, and every copy of one event (same uuid, same distinct id), are
 * on one shard, so `FINAL` on each shard still reads each event once. Every shard needs this
 * migration (there is no distributed DDL without Keeper): `npm run cluster` runs it on each.
 */
export const EVENTS_CLUSTER = 'hogbase_events';

function eventsTables(ch: ClickHouse, sharded: boolean): string[] {
  if (!sharded) return [eventsTableDdl(ch.features, ch.table('events'))];
  const [database] = ch.table('events').split('.');
  return [
    eventsTableDdl(ch.features, ch.table('events_shard')),
    `CREATE TABLE IF NOT EXISTS ${ch.table('events')} AS ${ch.table('events_shard')} ENGINE = Distributed(${EVENTS_CLUSTER}, ${database}, events_shard, cityHash64(distinct_id))`,
  ];
}

/**
 * Persons are not sharded: one table on the server the processes name, which every join of
 * theirs reads (the events' subquery is gathered there before it is joined).
 */
const personsTables = (ch: ClickHouse): string[] => personsTablesDdl(ch.features, (name) => ch.table(name));

/**
 * A second copy of the events ordered by person (`events_by_person`), which a person's list and
 * count read (event-reads.ts): in the time-ordered table one person's rows are spread over every
 * granule of the range, so reading them means reading the project's whole range. A materialized
 * view copies each insert into `events` as it lands, in the same INSERT (the writer pays a second
 * sorted part per insert; see bench/NOTES.md). The same ReplacingMergeTree key (uuid and time
 * included), so `FINAL` shows a retried insert once here too. The view is created before the
 * existing rows are copied: a row inserted meanwhile is in the copy twice at worst, which FINAL
 * reads once, and never missing. A later column added to `events` must be added here too (the
 * view selects `*`). Sharded, the copy is per shard beside `events_shard` (same sharding key).
 */
function eventsByPerson(ch: ClickHouse, sharded: boolean): string[] {
  const suffix = sharded ? '_shard' : '';
  const source = ch.table(`events${suffix}`);
  const copy = ch.table(`events_by_person${suffix}`);
  const time = ch.features.datetime64 ? 'timestamp' : 'timestamp, timestamp_ms';
  const statements = [
    `CREATE TABLE IF NOT EXISTS ${copy} AS ${source} ENGINE = ReplacingMergeTree PARTITION BY toYYYYMM(timestamp) ORDER BY (team_id, distinct_id, ${time}, uuid)`,
    `CREATE MATERIALIZED VIEW IF NOT EXISTS ${ch.table(`events_by_person_mv${suffix}`)} TO ${copy} AS SELECT * FROM ${source}`,
    `INSERT INTO ${copy} SELECT * FROM ${source}`,
  ];
  if (sharded) {
    const [database] = ch.table('events').split('.');
    statements.push(`CREATE TABLE IF NOT EXISTS ${ch.table('events_by_person')} AS ${copy} ENGINE = Distributed(${EVENTS_CLUSTER}, ${database}, events_by_person_shard, cityHash64(distinct_id))`);
  }
  return statements;
}

/** The tables holding events: what a delete must reach (the person-ordered copy is not rebuilt from `events`). */
export const EVENT_TABLES = ['events', 'events_by_person'] as const;

/** Versioned steps, applied once each in order; each must be safe to run again (no locks across servers). */
const MIGRATIONS: ReadonlyArray<(ch: ClickHouse, sharded: boolean) => string[]> = [eventsTables, personsTables, eventsByPerson];

/** Applies the steps not applied yet, up to `through` (all by default; tests stop earlier to stand for an older database). */
export async function migrateClickHouse(ch: ClickHouse, through = MIGRATIONS.length): Promise<void> {
  const [shards] = await ch.query<{ n: number | string }>(sql`SELECT count() AS n FROM system.clusters WHERE cluster = ${ch.dialect.bind(EVENTS_CLUSTER)}`);
  const sharded = Number(shards?.n ?? 0) > 0;
  const migrations = trusted(ch.table('hogbase_migrations'));
  await ch.command(sql`CREATE TABLE IF NOT EXISTS ${migrations} (version UInt32, applied_at DateTime) ENGINE = MergeTree ORDER BY version`);
  const applied = new Set((await ch.query<{ version: number | string }>(sql`SELECT version FROM ${migrations}`)).map((r) => Number(r.version)));
  for (const [i, step] of MIGRATIONS.entries()) {
    const version = i + 1;
    if (applied.has(version) || version > through) continue;
    for (const statement of step(ch, sharded)) await ch.command(trusted(statement));
    await ch.command(sql`INSERT INTO ${migrations} (version, applied_at) SELECT ${ch.dialect.bind(version)}, now()`);
  }
}

/** Whether `events` is the Distributed table over shards (see EVENTS_CLUSTER), which takes no `ALTER … DELETE` of its own. */
export async function eventsSharded(ch: ClickHouse): Promise<boolean> {
  const [database, name] = ch.table('events').split('.') as [string, string];
  const [row] = await ch.query<{ engine: string }>(sql`SELECT engine FROM system.tables WHERE database = ${ch.dialect.bind(database)} AND name = ${ch.dialect.bind(name)}`);
  return row?.engine === 'Distributed';
}
