import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { StoredEventRow } from '../../../src/core/events/columns';
import { AppError } from '../../../src/errors';
import { openClickHouse, parseClickHouseUrl, type ClickHouse } from '../../../src/storage/clickhouse/client';
import { countEvents, insertProcessed, newestEvents, type ClickHouseEventRow } from '../../../src/storage/clickhouse/events-table';
import { migrateClickHouse } from '../../../src/storage/clickhouse/schema';
import { encodePlacedLines, readRecords } from '../../../src/storage/events/log/row-lines';
import { CLICKHOUSE_SKIP_REASON, chdbClient, clickhouseServerAvailable, clickhouseServerUrl, testDatabaseName } from '../../helpers/clickhouse';

const T0 = Date.UTC(2026, 10, 20, 12, 0, 0);
const uuid = (n: number) => `01a219da-5fd6-7749-8000-${n.toString(16).padStart(12, '0')}`;

function row(n: number, overrides: Partial<StoredEventRow> = {}): StoredEventRow {
  return {
    uuid: uuid(n),
    teamId: 1,
    event: 'pageview',
    distinctId: `user-${n % 3}`,
    personId: `0f8e6d1c-0000-4000-8000-${n.toString(16).padStart(12, '0')}`,
    properties: JSON.stringify({ n, $browser: 'Firefox' }),
    timestamp: T0 + n * 1000,
    createdAt: T0 + n * 1000 + 7,
    elementsChain: '',
    ...overrides,
  };
}

const lines = (rows: readonly StoredEventRow[]) => encodePlacedLines(rows).toString('utf8');
const asRead = (r: StoredEventRow): ClickHouseEventRow => ({ uuid: r.uuid, teamId: r.teamId, event: r.event, distinctId: r.distinctId, personId: r.personId, properties: r.properties, timestamp: r.timestamp, createdAt: r.createdAt, elementsChain: r.elementsChain });

const engines: Array<{ name: string; available: boolean; reason: string; open: () => Promise<ClickHouse> }> = [
  { name: 'chDB (modern)', available: true, reason: '', open: async () => openClickHouse({ client: await chdbClient(), database: testDatabaseName() }) },
  { name: 'ClickHouse 18.16 server', available: clickhouseServerAvailable, reason: CLICKHOUSE_SKIP_REASON, open: async () => openClickHouse(parseClickHouseUrl(await clickhouseServerUrl())) },
];

for (const engine of engines) {
  const run = engine.available ? describe : describe.skip;
  run(`ClickHouse events table on ${engine.name}${engine.available ? '' : ` (skipped: ${engine.reason})`}`, () => {
    let ch: ClickHouse;
    beforeAll(async () => {
      ch = await engine.open();
      await migrateClickHouse(ch);
    });
    afterAll(async () => {
      await ch?.close();
    });

    test('the version decides the switches; migrating again changes nothing', async () => {
      const modern = !ch.version.startsWith('18.');
      expect(ch.features).toEqual({ datetime64: modern, jsonExtract: modern, queryParams: modern, mutationsSync: modern });
      await migrateClickHouse(ch);
      expect(await countEvents(ch, 1)).toBe(0);
    });

    test('rows come back exactly as logged, whatever their text holds', async () => {
      const odd = [
        row(1, { teamId: 11 }),
        row(2, { teamId: 11, event: 'tab\there', distinctId: "quote ' and \\ backslash", personId: null, properties: JSON.stringify({ text: 'line\nbreak\ttab\\slash', emoji: '😀', $browser: null }) }),
        row(3, { teamId: 11, event: 'ctrl\u0001char', distinctId: 'new\nline', elementsChain: 'a:nth-child="1"\tb', properties: JSON.stringify({ $current_url: 'https://x.test/?a=1&b=\'2\'', $os: 'Linux' }) }),
        row(4, { teamId: 11, timestamp: T0 + 4_999, createdAt: T0 + 5_001 }),
      ];
      await insertProcessed(ch, lines(odd), 1);
      expect(await newestEvents(ch, 11, { limit: 10 })).toEqual([...odd].sort((a, b) => b.timestamp - a.timestamp).map(asRead));
    });

    test('a load run twice (retried after an unknown outcome) shows each event once', async () => {
      const rows = Array.from({ length: 50 }, (_, i) => row(100 + i, { teamId: 12 }));
      const text = lines(rows);
      await insertProcessed(ch, text, 2);
      await insertProcessed(ch, text, 2);
      expect(await countEvents(ch, 12)).toBe(50);
      const listed = await newestEvents(ch, 12, { limit: 100 });
      expect(listed.map((r) => r.uuid)).toEqual(rows.map((r) => r.uuid).reverse());
    });

    test('projects are apart; newest first, ties by uuid, pages by cursor cover every event once', async () => {
      const rows = Array.from({ length: 25 }, (_, i) => row(200 + i, { teamId: 13, timestamp: T0 + Math.floor(i / 3) * 1000 + (i % 3 === 2 ? 1 : 0) }));
      await insertProcessed(ch, lines([...rows, row(300, { teamId: 14 })]), 3);
      const expected = [...rows].sort((a, b) => b.timestamp - a.timestamp || (a.uuid < b.uuid ? 1 : -1)).map(asRead);
      const pages: ClickHouseEventRow[][] = [];
      let before: { timestamp: number; uuid: string } | undefined;
      for (let i = 0; i < 5; i++) {
        const page = await newestEvents(ch, 13, { limit: 10, before });
        if (!page.length) break;
        pages.push(page);
        const last = page[page.length - 1]!;
        before = { timestamp: last.timestamp, uuid: last.uuid };
      }
      expect(pages.map((p) => p.length)).toEqual([10, 10, 5]);
      expect(pages.flat()).toEqual(expected);
      expect(await countEvents(ch, 13)).toBe(25);
      expect((await newestEvents(ch, 14, { limit: 10 })).map((r) => r.uuid)).toEqual([uuid(300)]);
    });

    test('values that try to leave their literal stay values', async () => {
      // At the newest event's time: the rows before it, plus it when its uuid sorts before the probe.
      const probes = ["' OR 1=1 --", "\\' OR 1=1 --", "x'); DROP TABLE events; --", '\\', "'", '{p0:String}'];
      for (const probe of probes) {
        const page = await newestEvents(ch, 13, { limit: 100, before: { timestamp: T0 + 8000, uuid: probe } });
        expect(page).toHaveLength(24 + (uuid(224) < probe ? 1 : 0));
      }
      expect(await countEvents(ch, 13)).toBe(25);
    });
  });
}

describe('ClickHouse statements and settings (no server)', () => {
  test('clickhouse:// URLs', () => {
    expect(parseClickHouseUrl('clickhouse://127.0.0.1:8123/analytics')).toEqual({ url: 'http://127.0.0.1:8123', username: 'default', password: '', database: 'analytics' });
    expect(parseClickHouseUrl('clickhouse://ana%40x:p%2Fw@db.local:8443/events_db')).toEqual({ url: 'http://db.local:8443', username: 'ana@x', password: 'p/w', database: 'events_db' });
    for (const [bad, message] of [
      ['http://127.0.0.1:8123/db', 'Expected a clickhouse:// URL, not http://.'],
      ['clickhouse://127.0.0.1/db', 'The URL needs a host and the HTTP port (clickhouse://HOST:PORT/DATABASE).'],
      ['clickhouse://127.0.0.1:8123/', 'The URL needs a database name (letters, digits, _) as its path.'],
      ['clickhouse://127.0.0.1:8123/db;drop', 'The URL needs a database name (letters, digits, _) as its path.'],
      ['not a url', 'Not a URL: expected clickhouse://[USER[:PASSWORD]@]HOST:PORT/DATABASE.'],
    ]) {
      expect(() => parseClickHouseUrl(bad!)).toThrow(new AppError('invalid_input', message!));
    }
  });

  test('log records read back in JavaScript as DuckDB reads them, and as the encoder wrote them', () => {
    expect([...readRecords('a\x1f\x15\x1f\x1eq\x1e\x1eu\nx\x1e\x1fz\n\x1dW1 9 0 1\n\nb\x1f\x1e\x1e\n')]).toEqual([['a', null, 'q\x1eu\nx', 'z'], ['b', '']]);
    const odd = row(7, { event: 'a\x1eb\nc', distinctId: '\x15', personId: null, elementsChain: '\x1f' });
    const [fields] = [...readRecords(lines([odd]))];
    expect([fields![0], fields![2], fields![3], fields![7]]).toEqual([odd.uuid, odd.event, odd.distinctId, odd.elementsChain]);
  });

  test('a server that does not answer is a 503 with Retry-After, naming no engine', async () => {
    const error = await openClickHouse(parseClickHouseUrl('clickhouse://127.0.0.1:1/db')).catch((e) => e);
    expect(error).toBeInstanceOf(AppError);
    expect({ kind: error.kind, detail: error.detail, retryAfter: error.retryAfter }).toEqual({ kind: 'unavailable', detail: 'The events database is not reachable; retry later.', retryAfter: 5 });
  });
});
