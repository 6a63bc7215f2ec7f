import { afterEach, describe, expect, test } from 'bun:test';
import { bind, joinSql, sql, type SqlFragment } from '../../../../src/core/query';
import { orderedScan } from '../../../../src/storage/events/read/export-reads';
import { duckdbEventReads } from '../../../../src/storage/events/read/reads';
import { QueryRunner } from '../../../../src/storage/events/read/runner';
import { makeEvent, openHarness, type Harness } from '../helpers';

let h: Harness | null = null;
afterEach(async () => {
  await h?.cleanup();
  h = null;
});

const idsIn = (n: number): SqlFragment => sql`distinct_id IN (${joinSql(Array.from({ length: n }, (_, i) => bind(`user-${i}`)), ', ')})`;

describe('orderedScan', () => {
  // DuckDB makes an IN list of five values or more a hash join, whose rows come out of order with
  // several threads (duckdb/duckdb#24398): a newest-first export of a person with five distinct
  // ids listed rows out of order from "sorted" files. Such a slice is sorted instead.
  test('a slice whose conditions DuckDB plans as a join is not read as a scan; one it plans as filters is', async () => {
    h = await openHarness();
    await h.store.append(Array.from({ length: 200 }, (_, n) => makeEvent(n)));
    await h.store.flush();
    await h.store.compact();
    expect(h.store.stats()).toMatchObject({ hotRows: 0, parquetRows: 200 });
    const ctx = { runner: new QueryRunner({ store: () => duckdbEventReads(h!.store), timeoutMs: 10_000 }), teamId: 1 };
    const slice = { from: null, to: Date.UTC(2025, 0, 1), limit: null };
    const scanned = (where: SqlFragment) => orderedScan(ctx, { person: false, where }, 'DESC', slice);
    expect(await scanned(sql`event = ${bind('$pageview')}`)).not.toBeNull();
    expect(await scanned(sql`timestamp >= ${bind('2024-01-01 00:01:00')}::TIMESTAMP AND timestamp < ${bind('2024-01-01 00:02:00')}::TIMESTAMP`)).not.toBeNull();
    // The plan's operators are read, not its text: a value naming a join is a filter like any other.
    expect(await scanned(sql`event <> ${bind('HASH_JOIN')}`)).not.toBeNull();
    expect(await scanned(idsIn(4))).not.toBeNull();
    expect(await scanned(idsIn(5))).toBeNull();
    expect(await scanned(idsIn(12))).toBeNull();
    // The slice's own conditions when given (a key cut of the scope's), not the scope's.
    expect(await orderedScan(ctx, { person: false, where: sql`true` }, 'DESC', slice, idsIn(6))).toBeNull();
  });
});
