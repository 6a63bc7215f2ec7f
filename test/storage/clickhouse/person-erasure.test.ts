import { describe, expect, test } from 'bun:test';
import { CLICKHOUSE, CLICKHOUSE_18, clickhouseFeatures, type SqlFragment } from '../../../src/core/query';
import { AppError } from '../../../src/errors';
import type { ClickHouse } from '../../../src/storage/clickhouse/client';
import { deletePersonEvents } from '../../../src/storage/clickhouse/person-erasure';

/**
 * The statements a person's erasure sends, and how it waits for the mutation, against a fake
 * server: what it is asked and what it answers are this test's. The real engines (chDB and
 * 18.16) run it in test/modules/persons-delete-clickhouse.test.ts.
 */
function fakeServer(version: string, answers: { rows: number; pending: (poll: number) => string[]; copyPending?: () => string[] }) {
  const sent: Array<{ sql: string; params: unknown }> = [];
  let polls = 0;
  const features = clickhouseFeatures(version);
  const dialect = features.datetime64 ? CLICKHOUSE : CLICKHOUSE_18;
  const record = (statement: SqlFragment) => {
    const { sql, params } = dialect.render(statement);
    sent.push({ sql: sql.replace(/\s+/g, ' '), params });
    return sql;
  };
  const ch = {
    version,
    features,
    dialect,
    table: (name: string) => `analytics.${name}`,
    async query(statement: SqlFragment) {
      const sql = record(statement);
      if (sql.startsWith('SELECT count()')) return [{ n: String(answers.rows) }];
      // The person-ordered copy's mutations (schema.ts) are done at once here, unless a test says otherwise.
      if (sql.includes("table = 'events_by_person'")) return (answers.copyPending?.() ?? []).map((id) => ({ id }));
      if (sql.includes('system.mutations')) return answers.pending(polls++).map((id) => ({ id }));
      throw new Error(`unexpected: ${sql}`);
    },
    async command(statement: SqlFragment) {
      record(statement);
    },
  } as unknown as ClickHouse;
  return { ch, sent };
}

/** A sleep that only adds up what it was asked to wait. */
const countingSleep = () => {
  const slept: number[] = [];
  return { slept, wait: { sleep: async (ms: number) => void slept.push(ms), maxWaitMs: 5_000 } };
};

const MATCH = { distinctIds: ['alice', "x') OR 1=1 --"], personIds: ['01a219da-5fd6-7749-8000-0000000000aa'] };

describe('deleting a person\'s events in ClickHouse', () => {
  test('modern: counted, then one mutation the server waits for (mutations_sync), every value bound', async () => {
    const { ch, sent } = fakeServer('26.7.2.1', { rows: 3, pending: () => [] });
    expect(await deletePersonEvents(ch, 7, MATCH)).toBe(3);
    const where = 'team_id = {p0:Int64} AND (distinct_id IN ({p1:String}, {p2:String}) OR toString(person_id) IN ({p3:String}))';
    const params = { p0: 7, p1: 'alice', p2: "x') OR 1=1 --", p3: '01a219da-5fd6-7749-8000-0000000000aa' };
    expect(sent).toEqual([
      { sql: `SELECT count() AS n FROM analytics.events WHERE ${where}`, params },
      { sql: `ALTER TABLE analytics.events DELETE WHERE ${where} SETTINGS mutations_sync = 1`, params },
      { sql: `ALTER TABLE analytics.events_by_person DELETE WHERE ${where} SETTINGS mutations_sync = 1`, params },
    ]);
  });

  test('nothing of the person: no mutation (on 18.16 one rewrites the whole table)', async () => {
    const { ch, sent } = fakeServer('18.16.1', { rows: 0, pending: () => ['mutation_9.txt'] });
    expect(await deletePersonEvents(ch, 7, MATCH)).toBe(0);
    expect(sent.map((s) => s.sql.split(' ')[0])).toEqual(['SELECT']);
  });

  test('18.16: values as escaped literals, then system.mutations polled until the mutations pending after it are done', async () => {
    // Ours and an older one pending; a later one (another erasure's) is not waited for.
    const answers = [['mutation_3.txt', 'mutation_4.txt'], ['mutation_4.txt'], ['mutation_4.txt', 'mutation_5.txt'], ['mutation_5.txt']];
    const { ch, sent } = fakeServer('18.16.1', { rows: 2, pending: (poll) => answers[Math.min(poll, answers.length - 1)]! });
    const { slept, wait } = countingSleep();
    expect(await deletePersonEvents(ch, 7, MATCH, wait)).toBe(2);
    const where = "team_id = 7 AND (distinct_id IN ('alice', 'x\\') OR 1=1 --') OR toString(person_id) IN ('01a219da-5fd6-7749-8000-0000000000aa'))";
    const polled = (table: string) => `SELECT mutation_id AS id FROM system.mutations WHERE database = 'analytics' AND table = '${table}' AND is_done = 0`;
    expect(sent.slice(1)).toEqual([
      { sql: `ALTER TABLE analytics.events DELETE WHERE ${where}`, params: {} },
      ...Array(4).fill({ sql: polled('events'), params: {} }),
      // The person-ordered copy too: a person's list reads it.
      { sql: `ALTER TABLE analytics.events_by_person DELETE WHERE ${where}`, params: {} },
      { sql: polled('events_by_person'), params: {} },
    ]);
    expect(slept).toEqual([20, 40, 80]);
  });

  test('18.16: a mutation that does not finish is a 503 saying so once the wait is spent, not a wait without end', async () => {
    const { ch } = fakeServer('18.16.1', { rows: 2, pending: () => ['mutation_3.txt'] });
    const { slept, wait } = countingSleep();
    const error = await deletePersonEvents(ch, 7, MATCH, wait).catch((e) => e);
    expect(error).toBeInstanceOf(AppError);
    expect({ kind: error.kind, detail: error.detail }).toEqual({
      kind: 'unavailable',
      detail: "The events database has not finished deleting the person's events yet: the deletion goes on there, and is checked again at the next start.",
    });
    expect(slept.reduce((a, b) => a + b, 0)).toBe(5_000);
    expect(Math.max(...slept)).toBe(1_000);
  });
});
