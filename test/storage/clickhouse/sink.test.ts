import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test';
import { openClickHouse, parseClickHouseUrl, type ClickHouse } from '../../../src/storage/clickhouse/client';
import { clickhouseSink, countEvents, newestEvents } from '../../../src/storage/clickhouse/events-table';
import { migrateClickHouse } from '../../../src/storage/clickhouse/schema';
import type { EventSink, ProcessIntake } from '../../../src/storage/events';
import { createIntakeProcessor } from '../../../src/pipeline';
import { migrate } from '../../../src/storage/migrations';
import { createPersonStore } from '../../../src/storage/persons/person-store';
import type { SeenTracker } from '../../../src/storage/seen/seen-tracker';
import { CLICKHOUSE_SKIP_REASON, chdbClient, clickhouseServerAvailable, clickhouseServerUrl, testDatabaseName } from '../../helpers/clickhouse';
import { makeEvent, openHarness, type Harness } from '../events/helpers';

/**
 * The embedded event store loading into ClickHouse instead of DuckDB's tiers (EVENTS_STORE): the
 * same log, processing and watermark; the load is one INSERT of the batch's processed files, and
 * a batch inserted twice (a retry after a failure whose outcome was unknown) is read once.
 */
const engines: Array<{ name: string; available: boolean; reason: string; open: () => Promise<ClickHouse> }> = [
  { name: 'chDB (modern)', available: true, reason: '', open: async () => openClickHouse({ client: await chdbClient(), database: testDatabaseName() }) },
  { name: 'ClickHouse 18.16 server', available: clickhouseServerAvailable, reason: CLICKHOUSE_SKIP_REASON, open: async () => openClickHouse(parseClickHouseUrl(await clickhouseServerUrl())) },
];

for (const engine of engines) {
  const run = engine.available ? describe : describe.skip;
  run(`the event store's loads into ClickHouse on ${engine.name}${engine.available ? '' : ` (skipped: ${engine.reason})`}`, () => {
    let ch: ClickHouse;
    let h: Harness | null = null;
    let team = 100;
    beforeAll(async () => {
      ch = await engine.open();
      await migrateClickHouse(ch);
    });
    afterAll(async () => {
      await ch?.close();
    });
    afterEach(async () => {
      await h?.cleanup();
      h = null;
    });

    const rowsOf = (teamId: number, n: number, from = 0) => Array.from({ length: n }, (_, i) => makeEvent(from + i, { teamId }));

    test('rows appended across several segments are inserted, read back whole, and DuckDB keeps none of them', async () => {
      const teamId = ++team;
      h = await openHarness({ sink: clickhouseSink(ch), bufferMaxRows: 1_000 });
      const rows = rowsOf(teamId, 2_500);
      for (let i = 0; i < rows.length; i += 500) await h.store.append(rows.slice(i, i + 500));
      await h.store.flush();
      expect(await countEvents(ch, teamId)).toBe(2_500);
      const newest = await newestEvents(ch, teamId, { limit: 3 });
      const expected = [...rows].sort((a, b) => b.timestamp - a.timestamp).slice(0, 3);
      expect(newest).toEqual(expected.map(({ hot: _hot, ...r }) => r));
      const stats = h.store.stats();
      expect({ hot: stats.hotRows, files: stats.parquetFiles, loaded: stats.flushedRows }).toEqual({ hot: 0, files: 0, loaded: 2_500 });
    });

    test('a restart after the insert and before the watermark moved: the requests are processed again, and events without a client uuid get the ids they got the first time (read once)', async () => {
      const teamId = ++team;
      const real = clickhouseSink(ch);
      let inserted = 0;
      const dying: EventSink = {
        async load(files, watermark) {
          inserted += await real.load(files, watermark);
          return new Promise<number>(() => undefined); // the process dies here: the watermark never moves
        },
      };
      let processor: ProcessIntake | null = null;
      const intake: ProcessIntake = async (...args) => {
        if (!processor) {
          await migrate(h!.db);
          processor = createIntakeProcessor(createPersonStore(h!.db), { recordSummary() {} } as unknown as SeenTracker);
        }
        return processor(...args);
      };
      h = await openHarness({ intake, sink: dying, bufferMaxAgeMs: 60_000 });
      const events = Array.from({ length: 20 }, (_, i) => ({ event: 'e', distinct_id: `u${i}`, properties: { i } }));
      await h.store.appendIntake({
        context: { teamId, receivedAt: Date.UTC(2025, 0, 1), ip: null, anonymizeIps: false, sentAt: null, engage: false, uuidSeed: '0123456789abcdef' },
        body: JSON.stringify({ api_key: 'k', batch: events }),
        events: events.length,
        parsed: events,
        distinctIds: events.map((e) => e.distinct_id),
      });
      void h.store.flush();
      for (let i = 0; i < 400 && inserted === 0; i++) await Bun.sleep(25);
      expect(inserted).toBe(20);
      // The "crash": the same files opened again, the sink working.
      h.store = { close: async () => undefined } as typeof h.store;
      processor = null;
      await h.reopen({ intake, sink: real, hooks: {} });
      await h.store.flush();
      expect(await countEvents(ch, teamId)).toBe(20);
    });

    test('a load that fails after its insert (its answer lost, or the process killed before the watermark moved) is done again: the rows are read once', async () => {
      const teamId = ++team;
      const sink = clickhouseSink(ch);
      let failures = 0;
      const flaky: EventSink = {
        async load(files, watermark) {
          const n = await sink.load(files, watermark);
          if (failures++ < 2) throw new Error('the answer was lost');
          return n;
        },
      };
      h = await openHarness({ sink: flaky, flushRetryMs: 1 });
      await h.store.append(rowsOf(teamId, 300));
      await h.store.flush();
      expect(failures).toBe(3);
      expect(await countEvents(ch, teamId)).toBe(300);
      expect(h.store.stats().deadLetters).toBe(0);
    });
  });
}
