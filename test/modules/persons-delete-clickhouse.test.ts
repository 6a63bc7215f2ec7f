import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sql, trusted } from '../../src/core/query';
import { uuidv7 } from '../../src/ids';
import { openClickHouse, parseClickHouseUrl, type ClickHouse } from '../../src/storage/clickhouse/client';
import { migrateClickHouse } from '../../src/storage/clickhouse/schema';
import { CLICKHOUSE_SKIP_REASON, chdbClient, clickhouseServerAvailable, clickhouseServerUrl, testDatabaseName } from '../helpers/clickhouse';
import { createTestApp, errorOf, reopenTestApp, type TestApp, type TestStoreOptions } from '../helpers/test-app';

/**
 * `DELETE /persons/:id/?delete_events=true` on an embedded server keeping its events in
 * ClickHouse (EVENTS_STORE, the store's loads go there): alice's events are in ClickHouse, some
 * of them twice (a load repeated after an unknown outcome), and one more is still in the log
 * when the DELETE arrives. Afterwards nothing of hers is read back through the events API
 * (list, `select`, HogQL, event by id) nor counted in ClickHouse with or without FINAL, nor left
 * in the data directory's files, also after a restart; bob's and carl's (no person) events all
 * stay. On chDB (modern ClickHouse: the mutation is waited for by a setting) and on the 18.16
 * server (polled in system.mutations).
 */
const NOW = new Date('2024-03-10T12:00:00.000Z');
const DAY = 86_400_000;
const SECRET = 'alice-private-5d1c0b';
const PERSONS = '/api/projects/@current/persons/';

interface Sent {
  event: string;
  distinct_id: string;
  timestamp: string;
  uuid: string;
  properties: Record<string, unknown>;
}
let n = 0;
const ev = (distinctId: string, daysAgo: number, properties: Record<string, unknown> = {}, event = '$pageview'): Sent => {
  const ms = NOW.getTime() - daysAgo * DAY + ++n * 1000;
  return { event, distinct_id: distinctId, timestamp: new Date(ms).toISOString(), uuid: uuidv7(ms), properties };
};
const alice = (distinctId: string, daysAgo: number, extra: Record<string, unknown> = {}, event?: string) => ev(distinctId, daysAgo, { secret: SECRET, ...extra }, event);
const bob = (daysAgo: number) => ev('bob', daysAgo, { plan: 'pro' });
const carl = (daysAgo: number) => ev('carl', daysAgo, { $process_person_profile: false });

const engines: Array<{ name: string; available: boolean; reason: string; open: () => Promise<ClickHouse> }> = [
  { name: 'chDB (modern)', available: true, reason: '', open: async () => openClickHouse({ client: await chdbClient(), database: testDatabaseName() }) },
  { name: 'ClickHouse 18.16 server', available: clickhouseServerAvailable, reason: CLICKHOUSE_SKIP_REASON, open: async () => openClickHouse(parseClickHouseUrl(await clickhouseServerUrl())) },
];

for (const engine of engines) {
  const run = engine.available ? describe : describe.skip;
  run(`DELETE /persons/:id/?delete_events=true with the events in ClickHouse: ${engine.name}${engine.available ? '' : ` (skipped: ${engine.reason})`}`, () => {
    let ch: ClickHouse;
    let t: TestApp;
    const sent: Sent[] = [];
    let stall: Promise<void> | null = null;
    /** Events inserted into ClickHouse twice (beforeAll), and alice's event after her erasure. */
    const twice = new Set<string>();
    let later: Sent;
    const store: TestStoreOptions = { hooks: { beforeLoad: () => stall ?? undefined } };
    const reopen = async () => (t = await reopenTestApp(t, {}, () => NOW, undefined, store, { eventsStore: ch }));

    const capture = async (events: Sent[]) => {
      const res = await t.call('POST', '/batch/', { key: null, body: { api_key: t.account.project.apiToken, batch: events } });
      expect(res.status).toBe(200);
      sent.push(...events);
    };
    const teamId = () => t.account.project.id;
    const of = (who: (e: Sent) => boolean) => sent.filter(who);
    const isAlice = (e: Sent) => e.distinct_id.startsWith('alice');
    const kept = () => of((e) => !isAlice(e));
    const list = (query: Record<string, string>) => t.json('GET', `/api/projects/@current/events/?${new URLSearchParams({ limit: '1000', after: '2024-01-01T00:00:00Z', ...query })}`);
    const hogql = (query: string) => t.json('POST', '/api/projects/@current/query/', { body: { query: { kind: 'HogQLQuery', query } } });
    const byDistinctId = (events: Sent[]) =>
      Object.entries(Object.groupBy(events, (e) => e.distinct_id))
        .map(([id, es]) => [id, es!.length] as [string, number])
        .sort(([a], [b]) => (a < b ? -1 : 1));

    /** Rows in ClickHouse matching `where` (a trusted condition of this test), read with and without FINAL. */
    const stored = async (where: string) => {
      const count = async (final: string) =>
        Number((await ch.query<{ n: string | number }>(sql`SELECT count() AS n FROM ${trusted(ch.table('events'))} ${trusted(final)} WHERE team_id = ${ch.dialect.bind(teamId())} AND (${trusted(where)})`))[0]!.n);
      return { final: await count('FINAL'), all: await count('') };
    };
    const ofAliceStored = () => stored(`distinct_id IN ('alice', 'alice-anon') OR position(properties, '${SECRET}') > 0`);

    /** What a reader can learn of `who`'s events through the events API. */
    const readable = async (distinctIds: string[], uuids: string[]) => ({
      listed: (await list({})).body.results.map((e: { id: string }) => e.id).sort(),
      byDistinctId: (await Promise.all(distinctIds.map(async (id) => (await list({ distinct_id: id })).body.results.length))).reduce((a, b) => a + b, 0),
      select: (await list({ select: JSON.stringify(['distinct_id', 'count()']), orderBy: JSON.stringify(['distinct_id']) })).body.results,
      hogql: (await hogql('SELECT distinct_id, count() FROM events GROUP BY distinct_id ORDER BY distinct_id')).body.results,
      hogqlSecret: (await hogql(`SELECT count() FROM events WHERE properties.secret = '${SECRET}'`)).body.results,
      byId: await Promise.all(uuids.map(async (uuid) => (await t.call('GET', `/api/projects/@current/events/${uuid}/`)).status)),
    });
    const nothingOfAlice = () => ({
      listed: kept().map((e) => e.uuid).sort(),
      byDistinctId: 0,
      select: byDistinctId(kept()),
      hogql: byDistinctId(kept()),
      hogqlSecret: [[0]],
      byId: of(isAlice).map(() => 404),
    });

    /** Files under DATA_DIR holding SECRET: the log and its processed copies (DuckDB's database file aside, as persons-delete.test.ts says). */
    const filesWithSecret = async () => {
      const found: string[] = [];
      for (const entry of await readdir(t.dataDir, { recursive: true, withFileTypes: true })) {
        if (!entry.isFile() || (entry.parentPath === t.dataDir && entry.name === 'analytics.duckdb')) continue;
        if ((await readFile(join(entry.parentPath, entry.name))).includes(SECRET)) found.push(join(entry.parentPath, entry.name).slice(t.dataDir.length));
      }
      return found;
    };

    beforeAll(async () => {
      ch = await engine.open();
      await migrateClickHouse(ch);
      t = await createTestApp({}, () => NOW, undefined, store, { eventsStore: ch });
      // alice as two persons merged by $identify (the anonymous one's events keep its old person id), bob, carl.
      await capture([alice('alice', 5), alice('alice-anon', 5), bob(5), carl(5), alice('alice-anon', 4)]);
      await capture([alice('alice', 4, { $anon_distinct_id: 'alice-anon', $set: { email: 'alice@example.com' } }, '$identify'), bob(4), carl(4), alice('alice', 3)]);
      await t.deps.storage.events.flush();
      expect(t.deps.storage.persons.findByDistinctId(teamId(), 'alice-anon')!.uuid).toBe(t.deps.storage.persons.findByDistinctId(teamId(), 'alice')!.uuid);
      // A load repeated after an unknown outcome: the same rows twice on disk, once for FINAL.
      await ch.command(sql`INSERT INTO ${trusted(ch.table('events'))} SELECT * FROM ${trusted(ch.table('events'))} WHERE team_id = ${ch.dialect.bind(teamId())}`);
      for (const e of sent) twice.add(e.uuid);
      expect(await stored('1')).toEqual({ final: sent.length, all: 2 * sent.length });
    }, 30_000);
    afterAll(async () => {
      await t?.close();
      await ch?.close();
    });

    test('alice is readable before', async () => {
      const before = await readable(['alice', 'alice-anon'], of(isAlice).map((e) => e.uuid));
      expect(before.listed).toEqual(sent.map((e) => e.uuid).sort());
      expect(before.byId).toEqual(of(isAlice).map(() => 200));
      expect(await ofAliceStored()).toEqual({ final: of(isAlice).length, all: 2 * of(isAlice).length });
    });

    test('erases her events from ClickHouse, the one still in the log when the DELETE came included; the others keep all of theirs', async () => {
      // Loads held back: these are logged (the 200) and processed, not in ClickHouse.
      let release!: () => void;
      stall = new Promise<void>((resolve) => (release = resolve));
      await capture([alice('alice', 1), bob(1), carl(1)]);
      await t.deps.storage.events.awaitIntake(teamId(), null);
      expect(t.deps.storage.events.stats().bufferedRows).toBe(3);
      // The loads go on once the erasure waits for them: without that wait the mutation would run
      // first and the held row would be inserted after it (and found below).
      const events = t.deps.storage.events;
      const awaitLoaded = events.awaitLoaded;
      events.awaitLoaded = (...args) => {
        stall = null;
        release();
        return awaitLoaded.apply(events, args);
      };
      let res: Response;
      try {
        res = await t.call('DELETE', `${PERSONS}${t.deps.storage.persons.findByDistinctId(teamId(), 'alice')!.id}/?delete_events=true`);
      } finally {
        events.awaitLoaded = awaitLoaded;
        stall = null;
        release();
      }
      expect(res.status).toBe(202);
      expect(await res.text()).toBe('');
      // Right after the answer, with no wait: nothing of hers with or without FINAL.
      expect(await ofAliceStored()).toEqual({ final: 0, all: 0 });
      expect(await stored(`distinct_id IN ('bob', 'carl')`)).toEqual({ final: kept().length, all: kept().length + kept().filter((e) => twice.has(e.uuid)).length });
      expect(await readable(['alice', 'alice-anon'], of(isAlice).map((e) => e.uuid))).toEqual(nothingOfAlice());
      // The log's files and processed copies of her held event went with its load.
      await t.deps.storage.events.flush();
      expect(await filesWithSecret()).toEqual([]);
    }, 30_000);

    test('a restart brings nothing of hers back; new events of her old distinct id stay', async () => {
      later = ev('alice', 0.5, { fresh: true });
      await capture([later]);
      await reopen();
      const { listed, byDistinctId } = await readable(['alice', 'alice-anon'], []);
      expect({ listed, byDistinctId }).toEqual({ listed: [...kept(), later].map((e) => e.uuid).sort(), byDistinctId: 1 });
      expect(await ofAliceStored()).toEqual({ final: 1, all: 1 });
      expect(await filesWithSecret()).toEqual([]);
    }, 30_000);

    test('an erasure cut short in ClickHouse is finished at the next start', async () => {
      const frank = [ev('frank', 3, { secret: 'frank' }), ev('frank', 2, { secret: 'frank' })];
      await capture(frank);
      await t.deps.storage.events.flush();
      const uuid = t.deps.storage.persons.findByDistinctId(teamId(), 'frank')!.uuid;
      const command = ch.command;
      ch.command = (statement) => (/^ALTER TABLE/.test(statement.sql) ? Promise.reject(new Error('connection reset')) : command.call(ch, statement));
      try {
        expect(await t.json('DELETE', `${PERSONS}${uuid}/?delete_events=1`)).toMatchObject({ status: 500, body: errorOf('error', 'server_error', 'A server error occurred.') });
      } finally {
        ch.command = command;
      }
      // The person went first; the events are still there until the restart finishes the job.
      expect((await t.json('GET', `${PERSONS}${uuid}/`)).status).toBe(404);
      expect((await list({ distinct_id: 'frank' })).body.results.length).toBe(2);
      await reopen();
      expect((await list({ distinct_id: 'frank' })).body.results).toEqual([]);
      expect(await stored(`distinct_id = 'frank'`)).toEqual({ final: 0, all: 0 });
      expect((await readable([], [])).listed).toEqual([...kept().filter((e) => e.distinct_id !== 'frank'), later].map((e) => e.uuid).sort());
    }, 30_000);
  });
}
