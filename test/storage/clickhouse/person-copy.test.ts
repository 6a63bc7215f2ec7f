import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { StoredEventRow } from '../../../src/core/events/columns';
import { sql, trusted } from '../../../src/core/query';
import { openClickHouse, parseClickHouseUrl, type ClickHouse } from '../../../src/storage/clickhouse/client';
import { openClickHouseEventReads } from '../../../src/storage/clickhouse/event-reads';
import { insertProcessed } from '../../../src/storage/clickhouse/events-table';
import { migrateClickHouse } from '../../../src/storage/clickhouse/schema';
import { encodePlacedLines } from '../../../src/storage/events/log/row-lines';
import { CLICKHOUSE_SKIP_REASON, chdbClient, clickhouseServerAvailable, clickhouseServerUrl, testDatabaseName } from '../../helpers/clickhouse';

/**
 * The person-ordered copy of the events (schema.ts, `events_by_person`): an existing database
 * gets it with its rows, later inserts land in it, and a person's relation reads it with each
 * event once however often a load was retried. And which reads skip FINAL.
 */

const T0 = Date.UTC(2026, 10, 20, 12, 0, 0);
const uuid = (n: number) => `01a219da-5fd6-7749-8000-${n.toString(16).padStart(12, '0')}`;
const row = (n: number, distinctId: string): StoredEventRow => ({
  uuid: uuid(n), teamId: 7, event: 'pageview', distinctId, personId: null, properties: JSON.stringify({ n }),
  timestamp: T0 + n * 250, createdAt: T0 + n * 250, elementsChain: '',
});
const lines = (rows: readonly StoredEventRow[]) => encodePlacedLines(rows).toString('utf8');

const engines: Array<{ name: string; available: boolean; reason: string; open: () => Promise<ClickHouse> }> = [
  { name: 'chDB (modern)', available: true, reason: '', open: async () => openClickHouse({ client: await chdbClient(), database: testDatabaseName() }) },
  { name: 'ClickHouse 18.16 server', available: clickhouseServerAvailable, reason: CLICKHOUSE_SKIP_REASON, open: async () => openClickHouse(parseClickHouseUrl(await clickhouseServerUrl())) },
];

for (const engine of engines) {
  const run = engine.available ? describe : describe.skip;
  run(`the person-ordered copy on ${engine.name}${engine.available ? '' : ` (skipped: ${engine.reason})`}`, () => {
    let ch: ClickHouse;
    beforeAll(async () => {
      ch = await engine.open();
    });
    afterAll(async () => {
      await ch?.close();
    });

    /** A person's rows through the relation the events API reads, newest first. */
    async function personUuids(distinctId: string): Promise<string[]> {
      const relation = await openClickHouseEventReads(ch).eventsRelation(7, {}, { byPerson: true, distinctIds: [distinctId] });
      expect(relation.sql).toContain(ch.table('events_by_person'));
      const rows = await ch.query<{ uuid: string }>(
        sql`SELECT uuid FROM ${trusted(relation.sql)} AS events WHERE distinct_id = ${ch.dialect.bind(distinctId)} ORDER BY ${trusted(ch.features.datetime64 ? 'timestamp' : 'timestamp DESC, timestamp_ms')} DESC, uuid DESC`,
      );
      return rows.map((r) => r.uuid);
    }

    test('a database from before the copy gets it with its rows; later loads land in it; retried loads show once', async () => {
      await migrateClickHouse(ch, 1);
      const before = Array.from({ length: 12 }, (_, i) => row(i, `p-${i % 3}`));
      await insertProcessed(ch, lines(before), 1);
      await insertProcessed(ch, lines(before), 1);
      await migrateClickHouse(ch);
      const after = Array.from({ length: 6 }, (_, i) => row(100 + i, `p-${i % 3}`));
      await insertProcessed(ch, lines(after), 2);
      await insertProcessed(ch, lines(after), 2);
      const expected = [...before, ...after].filter((r) => r.distinctId === 'p-1').sort((a, b) => b.timestamp - a.timestamp).map((r) => r.uuid);
      expect(expected.length).toBe(6);
      expect(await personUuids('p-1')).toEqual(expected);
      const [copied] = await ch.query<{ n: string | number }>(sql`SELECT count() AS n FROM ${trusted(ch.table('events_by_person'))} FINAL WHERE team_id = 7`);
      expect(Number(copied?.n)).toBe(18);
    });

    test('rows fetched by uuid (the caller keeps one each) are read without FINAL; every other read with it', async () => {
      const reads = openClickHouseEventReads(ch);
      const plain = await reads.eventsRelation(7, {}, { onePerUuid: true });
      expect(plain.sql).toContain(`FROM ${ch.table('events')} WHERE`);
      // The same rows, a retried load's copies included: what FINAL would have merged.
      const [copies] = await ch.query<{ n: string | number }>(sql`SELECT count() AS n FROM ${trusted(plain.sql)} AS events WHERE distinct_id = 'p-1'`);
      expect(Number(copies?.n)).toBeGreaterThan(6);
      for (const options of [{}, { byPerson: true }, { distinctIds: ['p-1'] }]) expect((await reads.eventsRelation(7, {}, options)).sql).toContain(' FINAL WHERE');
    });

    test('a distinct id that tries to leave its literal reads nothing else', async () => {
      expect(await personUuids("p-1' OR 1=1 OR '")).toEqual([]);
      expect(await personUuids('p-1\\')).toEqual([]);
    });
  });
}
