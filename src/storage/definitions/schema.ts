import type { Migration } from '../migrations';

/**
 * Event and property definitions (versions 300–309; `event_properties`: which event names
 * carried which property keys, PostHog's `posthog_eventproperty`), and how often event queries named each
 * event, per day (310–319): a day bucket keeps the table small however many queries run, and
 * `query_usage_30_day` sums the last 30 buckets.
 */
export const definitionMigrations: Migration[] = [
  {
    version: 300,
    name: 'event and property definitions',
    statements: [
      `CREATE TABLE event_definitions (
        id UUID PRIMARY KEY,
        team_id INTEGER NOT NULL,
        name VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        last_seen_at TIMESTAMP,
        query_usage_30_day INTEGER NOT NULL DEFAULT 0,
        owner INTEGER,
        description VARCHAR,
        tags JSON NOT NULL DEFAULT '[]',
        verified BOOLEAN NOT NULL DEFAULT false,
        verified_at TIMESTAMP,
        verified_by INTEGER,
        updated_at TIMESTAMP,
        updated_by INTEGER,
        last_updated_at TIMESTAMP,
        post_to_chat BOOLEAN NOT NULL DEFAULT false,
        UNIQUE (team_id, name)
      )`,
      `CREATE TABLE property_definitions (
        team_id INTEGER NOT NULL,
        name VARCHAR NOT NULL,
        kind VARCHAR NOT NULL,
        is_numerical BOOLEAN NOT NULL DEFAULT false,
        created_at TIMESTAMP NOT NULL,
        PRIMARY KEY (team_id, kind, name)
      )`,
    ],
  },
  // No column added here has a default: DuckDB fails to replay a logged ALTER whose default calls
  // a function (a server killed before its next checkpoint could not open its database again),
  // and it refuses to commit an update of a table altered in the same transaction. So 302 fills
  // the new columns; ingestion writes them from then on.
  {
    version: 301,
    name: 'property types, annotations and the event names that carried each property',
    statements: [
      `ALTER TABLE property_definitions ADD COLUMN id UUID`,
      `ALTER TABLE property_definitions ADD COLUMN property_type VARCHAR`,
      `ALTER TABLE property_definitions ADD COLUMN description VARCHAR`,
      `ALTER TABLE property_definitions ADD COLUMN tags JSON`,
      `ALTER TABLE property_definitions ADD COLUMN updated_at TIMESTAMP`,
      `ALTER TABLE property_definitions ADD COLUMN updated_by INTEGER`,
      `CREATE TABLE event_properties (
        team_id INTEGER NOT NULL,
        event VARCHAR NOT NULL,
        property VARCHAR NOT NULL,
        PRIMARY KEY (team_id, event, property)
      )`,
    ],
  },
  {
    version: 302,
    name: 'existing property definitions get ids, numeric ones their type',
    statements: [
      `UPDATE property_definitions SET id = gen_random_uuid(), tags = '[]' WHERE id IS NULL`,
      `UPDATE property_definitions SET property_type = 'Numeric' WHERE is_numerical`,
    ],
  },
  {
    version: 310,
    name: 'event query usage',
    statements: [
      `CREATE TABLE event_query_usage (
        team_id INTEGER NOT NULL,
        event VARCHAR NOT NULL,
        day DATE NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (team_id, event, day)
      )`,
    ],
  },
];
