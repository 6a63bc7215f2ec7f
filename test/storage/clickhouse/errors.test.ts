import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { sql } from '../../../src/core/query';
import { openClickHouse, parseClickHouseUrl, translateClickHouseError, type ClickHouse, type ClickHouseTarget } from '../../../src/storage/clickhouse/client';
import { CLICKHOUSE_SKIP_REASON, chdbClient, clickhouseServerAvailable, clickhouseServerUrl, testDatabaseName } from '../../helpers/clickhouse';

/**
 * How the errors a real ClickHouse gives come out of storage: the error objects the client
 * throws (the 18.16 server's messages, which the client does not parse), not made-up ones.
 */

/** Far more rows than a test waits for: a statement that is still running when it is stopped. */
const ENDLESS = 'SELECT count() FROM numbers(100000000000)';

const as = (error: unknown) => {
  const e = translateClickHouseError(error);
  return { kind: e.kind as string, detail: e.detail, retryAfter: e.retryAfter };
};

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the statement to fail');
}

const run = clickhouseServerAvailable ? describe : describe.skip;
run(`ClickHouse 18.16's errors as the API answers them${clickhouseServerAvailable ? '' : ` (skipped: ${CLICKHOUSE_SKIP_REASON})`}`, () => {
  let target: ClickHouseTarget;
  let admin: ClickHouseClient;
  beforeAll(async () => {
    target = parseClickHouseUrl(await clickhouseServerUrl());
    admin = createClient({ url: target.url, username: target.username, log: { level: ClickHouseLogLevel.OFF } });
  });
  afterAll(async () => {
    await admin?.close();
  });

  test('a statement the server cancelled (KILL QUERY: QUERY_WAS_CANCELLED) is a 503 with Retry-After, not a 500', async () => {
    const client = createClient({ url: target.url, username: target.username, log: { level: ClickHouseLogLevel.OFF } });
    try {
      const queryId = `killed-${process.pid}-${Date.now()}`;
      const pending = client.query({ query: ENDLESS, format: 'JSONEachRow', query_id: queryId }).then((r) => r.json());
      pending.catch(() => undefined);
      // KILL answers the queries it found: none until the statement has started.
      for (let i = 0; i < 500; i++) {
        const killed = await (await admin.query({ query: `KILL QUERY WHERE query_id = '${queryId}' SYNC`, format: 'JSONEachRow' })).json();
        if (killed.length) break;
        await Bun.sleep(10);
      }
      const error = await failure(pending);
      expect(String(error)).toContain('Code: 394');
      expect(as(error)).toEqual({ kind: 'unavailable', detail: 'The events database cancelled the query (stopped by its operator, or restarting); retry later.', retryAfter: 5 });
    } finally {
      await client.close();
    }
  });

  test("the client's read timeout (the server reached, no answer in time) is the query's 504, not 'not reachable'", async () => {
    const client = createClient({ url: target.url, username: target.username, request_timeout: 200, log: { level: ClickHouseLogLevel.OFF } });
    try {
      const error = await failure(client.query({ query: ENDLESS, format: 'JSONEachRow' }));
      expect(as(error)).toEqual({ kind: 'query_timeout', detail: 'The query did not finish in time. Narrow it down (a time range, fewer events) and retry.', retryAfter: undefined });
    } finally {
      await client.close();
      // The statement runs on after the client gave up: stop it (not needed by the test, kind to the shared server).
      await admin.command({ query: `KILL QUERY WHERE query = '${ENDLESS}' ASYNC` }).catch(() => undefined);
    }
  });
});

/**
 * A statement that fails after some of its rows were computed yields none of them: the server
 * finishes a streamed statement before it answers (`wait_end_of_query`), so the failure is the
 * HTTP answer, never text after rows that a reader could take for a complete result (an export
 * would be cut short looking whole).
 */
const engines: Array<{ name: string; available: boolean; reason: string; open: () => Promise<ClickHouse> }> = [
  { name: 'chDB (modern)', available: true, reason: '', open: async () => openClickHouse({ client: await chdbClient(), database: testDatabaseName() }) },
  { name: 'ClickHouse 18.16 server', available: clickhouseServerAvailable, reason: CLICKHOUSE_SKIP_REASON, open: async () => openClickHouse(parseClickHouseUrl(await clickhouseServerUrl())) },
];
for (const engine of engines) {
  const runOn = engine.available ? describe : describe.skip;
  runOn(`a statement failing midway: ${engine.name}${engine.available ? '' : ` (skipped: ${engine.reason})`}`, () => {
    let ch: ClickHouse;
    beforeAll(async () => {
      ch = await engine.open();
    });
    afterAll(async () => {
      await ch?.close();
    });

    test('no row before the error, which is an AppError', async () => {
      // Blocks of 1,000 rows: the first ones are done long before the row that throws.
      const statement = sql`SELECT number, throwIf(number = ${ch.dialect.bind(150_000)}) AS failed FROM numbers(200000) SETTINGS max_block_size = 1000`;
      const rows: unknown[] = [];
      const error = await failure(
        (async () => {
          for await (const chunk of ch.stream(statement)) rows.push(...chunk);
        })(),
      );
      expect(rows).toEqual([]);
      expect(error).toMatchObject({ kind: 'error', detail: 'The events database failed the statement.' });
    });
  });
}
