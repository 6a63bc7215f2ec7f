import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { StoredEventRow } from '../../../src/core/events/columns';
import { openClickHouse, parseClickHouseUrl, type ClickHouse } from '../../../src/storage/clickhouse/client';
import { openClickHouseEventReads } from '../../../src/storage/clickhouse/event-reads';
import { clickhouseEventVolumes } from '../../../src/storage/clickhouse/event-volumes';
import { insertProcessed } from '../../../src/storage/clickhouse/events-table';
import { migrateClickHouse } from '../../../src/storage/clickhouse/schema';
import { encodePlacedLines } from '../../../src/storage/events/log/row-lines';
import { CLICKHOUSE_SKIP_REASON, chdbClient, clickhouseServerAvailable, clickhouseServerUrl, testDatabaseName } from '../../helpers/clickhouse';

const DAY = 86_400_000;
const UNTIL = new Date(Date.UTC(2026, 10, 20, 12, 0, 0, 250));
const SINCE = new Date(UNTIL.getTime() - 30 * DAY);
let n = 0;
const row = (teamId: number, event: string, timestamp: number): StoredEventRow => {
  n++;
  return {
    uuid: `01a219da-5fd6-7749-8000-${n.toString(16).padStart(12, '0')}`,
    teamId,
    event,
    distinctId: `user-${n % 3}`,
    personId: null,
    properties: '{}',
    timestamp,
    createdAt: timestamp,
    elementsChain: '',
  };
};

/**
 * Both ends of the window are included (as the DuckDB count's BETWEEN), to the millisecond;
 * another project's events and names not asked for are left out.
 */
const ROWS = [
  row(1, '$pageview', UNTIL.getTime()),
  row(1, '$pageview', UNTIL.getTime() - DAY),
  row(1, '$pageview', SINCE.getTime()),
  row(1, '$pageview', SINCE.getTime() - 1),
  row(1, '$pageview', UNTIL.getTime() + 1),
  row(1, "it's quoted", UNTIL.getTime() - 5 * DAY),
  row(1, 'not asked', UNTIL.getTime() - DAY),
  row(2, '$pageview', UNTIL.getTime() - DAY),
];

const engines: Array<{ name: string; available: boolean; reason: string; open: () => Promise<ClickHouse> }> = [
  { name: 'chDB (modern)', available: true, reason: '', open: async () => openClickHouse({ client: await chdbClient(), database: testDatabaseName() }) },
  { name: 'ClickHouse 18.16 server', available: clickhouseServerAvailable, reason: CLICKHOUSE_SKIP_REASON, open: async () => openClickHouse(parseClickHouseUrl(await clickhouseServerUrl())) },
];

for (const engine of engines) {
  const run = engine.available ? describe : describe.skip;
  run(`event definitions' volumes on ${engine.name}${engine.available ? '' : ` (skipped: ${engine.reason})`}`, () => {
    let ch: ClickHouse;
    beforeAll(async () => {
      ch = await engine.open();
      await migrateClickHouse(ch);
      const lines = encodePlacedLines(ROWS).toString('utf8');
      // A load retried after an unknown outcome: every row twice, in two parts.
      await insertProcessed(ch, lines, 1);
      await insertProcessed(ch, lines, 1);
    });
    afterAll(async () => {
      await ch?.close();
    });

    test('per name, in the window, each event once', async () => {
      const volumes = clickhouseEventVolumes(ch, openClickHouseEventReads(ch, {}));
      const names = ['$pageview', "it's quoted", 'purchase'];
      expect(await volumes(1, names, SINCE, UNTIL)).toEqual(new Map([['$pageview', 3], ["it's quoted", 1]]));
      expect(await volumes(2, names, SINCE, UNTIL)).toEqual(new Map([['$pageview', 1]]));
      expect(await volumes(1, [], SINCE, UNTIL)).toEqual(new Map());
    });
  });
}
