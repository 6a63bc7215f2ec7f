import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { AppError } from '../../src/errors';
import { QueryRunner } from '../../src/storage/events/read/runner';
import type { EventReads } from '../../src/storage/events/read/reads';
import { errorOf } from '../helpers/test-app';
import { B_EVENT, C_EVENT, openEventsFixture, type EventsFixture } from './events-fixture';

let f: EventsFixture;
beforeAll(async () => {
  f = await openEventsFixture();
});
afterAll(() => f.close());

/** What must never appear in project A's answers: the other projects' events. */
const FOREIGN = [B_EVENT.uuid, C_EVENT.uuid, 'xyz', 'other-project', '"eve"'];

async function expectSafe(query: Record<string, string>): Promise<number> {
  const res = await f.t.call('GET', f.path(query));
  const text = await res.text();
  expect([200, 400]).toContain(res.status);
  for (const word of FOREIGN) expect(text).not.toContain(word);
  if (res.status === 400) {
    const body = JSON.parse(text);
    expect(body.type).toBe('validation_error');
    expect(body.detail).not.toMatch(/\bFROM\b|read_parquet|events_hot/);
  }
  return res.status;
}

describe('injection probes through the API: a 400 or a correct answer inside the project', () => {
  test.each([
    ['select: a subquery', { select: '["(SELECT 1)"]' }, 400],
    ['select: a union', { select: '["event UNION SELECT uuid FROM events_hot"]' }, 400],
    ['select: read_csv', { select: '["read_csv(\'/etc/passwd\')"]' }, 400],
    ['select: glob', { select: '["glob(\'*\')"]' }, 400],
    ['select: a statement separator', { select: '["event; DROP TABLE events_hot"]' }, 400],
    ['select: a comment', { select: '["event -- x"]' }, 400],
    ['select: team_id', { select: '["team_id"]' }, 400],
    ['select: a quoted identifier', { select: '["\\"team_id\\""]' }, 400],
    ['select: COPY', { select: '["COPY"]' }, 400],
    ['select: ATTACH', { select: '["ATTACH"]' }, 400],
    ['select: getenv', { select: '["getenv(\'HOME\')"]' }, 400],
    ['select: a property key full of SQL', { select: '["properties.`x\'); DROP TABLE events_hot; --`"]' }, 200],
    ['where: widening the team', { select: '["event"]', where: '["1 = 1 OR team_id = 2"]' }, 400],
    ['where: an unbalanced parenthesis', { select: '["event"]', where: '["event = \'x\') OR (1 = 1"]' }, 400],
    ['where: a string closing early', { select: '["event"]', where: '["event = \'x\' OR \'1\' = \'1\'"]' }, 200],
    ['event: quotes', { event: "x' OR '1'='1" }, 200],
    ['distinct_id: a statement', { distinct_id: "'; DROP TABLE events_hot; --" }, 200],
    ['person_id: SQL', { person_id: '1 OR 1=1' }, 200],
    ['properties: a SQL key', { properties: '[{"key":"x\') OR 1=1 --","value":"y"}]' }, 200],
    ['properties: a SQL value', { properties: '[{"key":"plan","value":"x\' OR \'1\'=\'1"}]' }, 200],
    ['properties: a hogql filter', { properties: '[{"type":"hogql","key":"team_id = 2"}]' }, 400],
    ['properties: a bad regex', { properties: '[{"key":"plan","operator":"regex","value":"(?<x>a)"}]' }, 400],
    ['properties: an unsupported type', { properties: '[{"key":"x","type":"cohort","value":1}]' }, 400],
    ['after: SQL', { after: "2024-01-01' OR 1=1 --" }, 400],
    ['orderBy: SQL', { orderBy: '["timestamp; DROP TABLE x"]' }, 400],
    ['cursor: SQL', { cursor: "2024-01-01T00:00:00Z,x' OR 1=1 --" }, 200],
  ] as const)('%s', async (_name, query, status) => {
    expect(await expectSafe(query as Record<string, string>)).toBe(status);
  });

  test('a where that would be true everywhere still answers only this project', async () => {
    const { body } = await f.list({ select: '["event", "distinct_id"]', where: '["1 = 1 OR event = \'secret\'"]' });
    expect(body.results.map((r: string[]) => r[1])).not.toContain('eve');
    expect(body.results.length).toBe(6);
  });

  test('a hundred generated probes: never a 500, never another project’s rows', async () => {
    let seed = 20240110;
    const random = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
    const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
    const parts = ['event', 'distinct_id', 'properties.plan', "'x'", '1', 'team_id', "read_csv('x')", '(', ')', "'", ';', '--', 'OR', 'AND', '=', 'count()', 'UNION', 'SELECT', '*', 'person.properties.email', 'now()', 'interval 1 day', '/*'];
    const statuses = new Set<number>();
    for (let i = 0; i < 100; i++) {
      const expression = Array.from({ length: 1 + Math.floor(random() * 6) }, () => pick(parts)).join(' ');
      const query: Record<string, string> = random() < 0.5 ? { select: JSON.stringify([expression]) } : { select: '["event"]', where: JSON.stringify([expression]) };
      statuses.add(await expectSafe(query));
    }
    expect([...statuses].sort()).toEqual([200, 400]);
  });

  test.each([
    [`/api/projects/1%20OR%201=1/events/`],
    [`/api/projects/-1/events/`],
    [`/api/projects/99999/events/`],
  ])('a project id that is not one of the caller’s: 404 (%s)', async (path) => {
    const res = await f.t.json('GET', path);
    expect(res.status).toBe(404);
  });

  test("the other organization's project cannot be read with this key, by any route", async () => {
    for (const path of ['events/', `events/${B_EVENT.uuid}/`, 'events/values/?key=secret', 'events/?format=csv']) {
      expect((await f.t.json('GET', `/api/projects/${f.other.projectId}/${path}`)).status).toBe(404);
    }
  });

  test('the tables are unchanged by all of the above', async () => {
    const { body } = await f.list({ limit: '100', before: '2030-01-01' });
    expect(body.count).toBe(7);
  });
});

describe('time limit', () => {
  /** A store whose statements never finish, recording what the runner did about it. */
  const stuckStore = () => {
    const seen = { returned: 0, aborted: false };
    const store = {
      awaitIntake: async () => undefined,
      awaitVisible: async () => undefined,
      eventsRelation: async () => ({ sql: '(SELECT 1)', params: [] }),
      streamQuery: (_sql: string, _params: unknown[], options?: { signal?: AbortSignal }) => {
        options?.signal?.addEventListener('abort', () => (seen.aborted = true));
        return {
          next: () => new Promise(() => undefined),
          return: async () => {
            seen.returned++;
            return { value: undefined, done: true };
          },
          [Symbol.asyncIterator]() {
            return this;
          },
        };
      },
    } as unknown as EventReads;
    return { store, seen };
  };

  test('a statement past QUERY_TIMEOUT_MS is a 504 query_timeout; the statement is stopped', async () => {
    const { store, seen } = stuckStore();
    const runner = new QueryRunner({ store: () => store, timeoutMs: 50 });
    const started = performance.now();
    const error = await runner.rows({ sql: 'SELECT 1', params: [] }).catch((e) => e);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(error).toBeInstanceOf(AppError);
    expect({ kind: error.kind, status: error.status }).toEqual({ kind: 'query_timeout', status: 504 });
    expect(seen).toEqual({ returned: 1, aborted: true });
  });

  test('through the API', async () => {
    const g = await openEventsFixture({ QUERY_TIMEOUT_MS: '100' });
    const real = g.t.deps.storage.eventReads;
    try {
      // The real reads, whose statements never finish.
      (g.t.deps.storage as { eventReads: EventReads }).eventReads = { ...real, streamQuery: stuckStore().store.streamQuery };
      const res = await g.list();
      expect(res.status).toBe(504);
      expect(res.body).toEqual(
        errorOf('query_timeout', 'server_error', 'The query did not finish within 100 ms. Narrow it down (a time range, fewer events) and retry.'),
      );
    } finally {
      (g.t.deps.storage as { eventReads: EventReads }).eventReads = real;
      await g.close();
    }
  });
});

describe('waiting for just-acknowledged events', () => {
  /** The store's waits and the relations asked for, by request. */
  const recordWaits = (f: EventsFixture) => {
    const store = f.t.deps.storage.events;
    const seen = { waits: [] as number[], relations: [] as Array<boolean | undefined> };
    const awaitVisible = store.awaitVisible.bind(store);
    const eventsRelation = store.eventsRelation.bind(store);
    store.awaitVisible = (teamId) => {
      seen.waits.push(teamId);
      return awaitVisible(teamId);
    };
    store.eventsRelation = (teamId, range, options) => {
      seen.relations.push(options?.wait);
      return eventsRelation(teamId, range, options);
    };
    return {
      seen,
      restore() {
        store.awaitVisible = awaitVisible;
        store.eventsRelation = eventsRelation;
      },
    };
  };

  test('a request waits once, whatever number of statements it runs; the next request waits again', async () => {
    const f = await openEventsFixture();
    const { seen, restore } = recordWaits(f);
    try {
      // By event: the count alongside the keys of each slice of time walked back, then the rows.
      const page = await f.list({ event: '$pageview', limit: '2' });
      expect(page.status).toBe(200);
      expect(seen.waits).toEqual([f.projectId]);
      expect(seen.relations.length).toBeGreaterThanOrEqual(3);
      expect(seen.relations.every((wait) => wait === false)).toBe(true);
      const csv = await f.t.call('GET', f.path({ format: 'csv' }));
      expect(csv.status).toBe(200);
      expect(seen.waits).toEqual([f.projectId, f.projectId]);
      expect(seen.relations.every((wait) => wait === false)).toBe(true);
    } finally {
      restore();
      await f.close();
    }
  });
});
