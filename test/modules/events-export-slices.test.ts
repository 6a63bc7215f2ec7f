import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { uuidv7 } from '../../src/ids';
import type { Row } from '../../src/storage/db';
import { readParquet } from '../helpers/parquet';
import { NOW, openEventsFixture, recordStatements, relative, type EventsFixture } from './events-fixture';

/**
 * Exports cut into many slices (the slice size made a few rows through `deps.exportSlices`):
 * every format gives exactly the rows the list gives, in its order, however the slices fall,
 * and rows stored while an export runs neither take it past its `limit` nor fall between slices.
 */
const H = 3_600_000;
const MIN = 60_000;
const at = (offsetMs: number) => NOW.getTime() + offsetMs;

/** 24 events: hours of 3, 5, 12 (a busy hour: more than a slice) and 4 rows, empty hours between; no two at the same time. */
const OFFSETS = [
  ...[0, 1, 2].map((i) => -30 * H + i * MIN),
  ...[0, 1, 2, 3, 4].map((i) => -28 * H + i * MIN),
  ...Array.from({ length: 12 }, (_, i) => -20 * H + 1_000 + i * 250_000),
  ...[0, 1, 2, 3].map((i) => -2 * H + i * MIN),
];

const eventsAt = (offsets: readonly number[], tag: string) =>
  offsets.map((offset, i) => ({ event: i % 3 ? 'view' : 'click', distinct_id: `u${i % 4}`, timestamp: new Date(at(offset)), uuid: uuidv7(at(offset)), properties: { i, tag } }));

type Format = 'csv' | 'json' | 'ndjson' | 'parquet';
const FORMATS: Format[] = ['csv', 'json', 'ndjson', 'parquet'];

let f: EventsFixture;
beforeAll(async () => {
  f = await openEventsFixture();
  f.t.deps.exportSlices = { rows: 4, firstRows: 2 };
});
afterAll(() => f.close());

interface Project {
  id: number;
  token: string;
}

async function newProject(offsets: readonly number[] = OFFSETS): Promise<Project> {
  const project = await f.t.deps.storage.management.createProject(f.t.account.organization.id, `slices ${crypto.randomUUID()}`, {});
  await f.ingest(project.apiToken, eventsAt(offsets, 'base'));
  return { id: project.id, token: project.apiToken };
}

const url = (p: Project, query: Record<string, string>) => `/api/projects/${p.id}/events/?${new URLSearchParams(query)}`;

/** The ids the list gives for the query (without `limit`, one page of 100: these projects hold fewer rows). */
async function listed(p: Project, query: Record<string, string>): Promise<string[]> {
  const res = await f.t.json('GET', url(p, { limit: '100', ...query }));
  expect(res.status).toBe(200);
  if (!query.limit) expect(res.body.next).toBeNull();
  return res.body.results.map((e: { id: string }) => e.id);
}

/** The ids an export gives, in its order. */
async function exported(p: Project, format: Format, query: Record<string, string>): Promise<string[]> {
  const res = await f.t.call('GET', url(p, { format, ...query }));
  expect(res.status).toBe(200);
  if (format === 'parquet') return (await readParquet(new Uint8Array(await res.arrayBuffer()), 'id')).rows.map((r) => String(r.id));
  const text = await res.text();
  if (format === 'json') return JSON.parse(text).results.map((e: { id: string }) => e.id);
  if (format === 'ndjson') return text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l).id);
  // These rows hold no comma, quote or line break: a record is a line.
  const [header, ...records] = text.split('\r\n').filter((l) => l !== '');
  const id = header!.split(',').indexOf('id');
  return records.map((r) => r.split(',')[id]!);
}

/**
 * Run `hook` (awaited) just before the `nth` statement `matches` picks runs, while the export
 * that issues it waits: rows written there arrive "meanwhile", after the plan was counted. With
 * `after`: just after that statement has given its rows, before its caller goes on.
 */
function beforeStatement(matches: (sql: string) => boolean, nth: number, hook: () => Promise<void>, after = false): { ran: () => boolean; restore(): void } {
  const store = f.t.deps.storage.events;
  const original = store.streamQuery.bind(store);
  let seen = 0;
  let ran = false;
  const run = async () => {
    await hook();
    ran = true;
  };
  store.streamQuery = (sql, params, options) => {
    if (!matches(sql) || ++seen !== nth) return original(sql, params, options);
    return (async function* (): AsyncGenerator<Row[]> {
      if (!after) await run();
      yield* original(sql, params, options);
      if (after) await run();
    })();
  };
  return { ran: () => ran, restore: () => void (store.streamQuery = original) };
}

/** The statement that reads a slice: a COPY for csv and parquet, the rows for json and ndjson. */
const sliceStatement = (format: Format) => (sql: string) => (format === 'csv' || format === 'parquet' ? sql.startsWith('COPY') : sql.startsWith('SELECT uuid, event, distinct_id, properties'));

async function storeMeanwhile(p: Project, offsets: readonly number[]): Promise<void> {
  await f.ingest(p.token, eventsAt(offsets, 'meanwhile'));
  await f.t.deps.storage.events.awaitLoaded(p.id);
}

const QUERIES: Array<Record<string, string>> = [
  {},
  { orderBy: '["timestamp"]' },
  { limit: '7' },
  { limit: '13', orderBy: '["timestamp"]' },
  { limit: '20' },
  { limit: '9', offset: '3' },
  { event: 'view', limit: '10' },
  { after: new Date(at(-29 * H)).toISOString(), before: new Date(at(-19 * H - 30 * MIN)).toISOString() },
];

describe('exports of many slices', () => {
  test('every format gives the rows of the list, in its order, from hot rows and from time-ordered files', async () => {
    const p = await newProject();
    const check = async () => {
      for (const query of QUERIES) {
        const expected = await listed(p, query);
        for (const format of FORMATS) expect({ format, query, ids: await exported(p, format, query) }).toEqual({ format, query, ids: expected });
      }
    };
    const { statements, restore } = recordStatements(f);
    await exported(p, 'csv', {});
    restore();
    // 24 rows, 4 a slice (2 in the first): a COPY a slice.
    expect(statements.filter((s) => s.startsWith('COPY')).length).toBeGreaterThanOrEqual(6);
    await check();
    await f.t.deps.storage.events.compact();
    await check();
  }, 60_000);

  // Time-ordered files hold rows of one time in the order they were loaded, not by uuid as the
  // list orders them: a JSON page read from them as a scan took its `next` cursor from the row
  // last in the file, and the next page gave again the rows of that time left after it.
  test('rows of one time: the pages of a JSON export with a limit give every row once, in the order of the list', async () => {
    const ms = [-30 * H, -29 * H, -20 * H, -20 * H + MIN, -2 * H];
    const events = ms.flatMap((offset, k) =>
      Array.from({ length: 4 }, (_, i) => ({ event: 'tie', distinct_id: `u${i}`, timestamp: new Date(at(offset)), uuid: `0190${k}000-0000-7000-8000-00000000000${(i * 3) % 4}`, properties: { k, i } })),
    );
    const project = await f.t.deps.storage.management.createProject(f.t.account.organization.id, `ties ${crypto.randomUUID()}`, {});
    await f.ingest(project.apiToken, events);
    await f.t.deps.storage.events.compact();
    const p = { id: project.id, token: project.apiToken };
    const expected = await listed(p, {});
    expect(expected.length).toBe(20);
    for (const limit of ['1', '2', '3', '5']) {
      const ids: string[] = [];
      let next: string | null = url(p, { format: 'json', limit });
      for (let pages = 0; next && pages < 30; pages++) {
        const res = await f.t.call('GET', next.startsWith('http') ? relative(next) : next);
        const body = JSON.parse(await res.text());
        ids.push(...body.results.map((e: { id: string }) => e.id));
        next = body.next;
      }
      expect({ limit, ids }).toEqual({ limit, ids: expected });
    }
  });

  test('a busy hour is split into slices of about the slice size', async () => {
    // 40 rows in ten minutes of one hour: ten slices' worth.
    const p = await newProject(Array.from({ length: 40 }, (_, i) => -5 * H + i * 15_000));
    const { statements, restore } = recordStatements(f);
    const ids = await exported(p, 'csv', {});
    restore();
    expect(ids).toEqual(await listed(p, {}));
    expect(statements.filter((s) => s.startsWith('COPY')).length).toBeGreaterThanOrEqual(8);
    for (const format of FORMATS) expect(await exported(p, format, { orderBy: '["timestamp"]', limit: '31' })).toEqual(await listed(p, { orderBy: '["timestamp"]', limit: '31' }));
  });
});

describe('rows stored while an export runs', () => {
  // Before the second slice is read: at the top of the busy hour, which a later slice of a
  // newest-first export reads (the first is the newest hour).
  const scenarios: Array<{ name: string; query: Record<string, string>; offsets: number[] }> = [
    { name: 'a few rows in a slice before the one the limit cuts', query: { limit: '20' }, offsets: [-20 * H + 3_500_000, -20 * H + 3_510_000, -20 * H + 3_520_000] },
    { name: 'more rows than the limit leaves', query: { limit: '20' }, offsets: Array.from({ length: 20 }, (_, i) => -20 * H + 3_000_000 + i * 10_000) },
    { name: 'rows in an hour counted empty and below the oldest counted row', query: {}, offsets: [-10 * H, -24 * H + 5, -100 * H] },
    { name: 'oldest first, rows ahead in empty hours', query: { orderBy: '["timestamp"]' }, offsets: [-29 * H + 7, -10 * H, -H + 30 * MIN] },
    { name: 'oldest first with a limit', query: { orderBy: '["timestamp"]', limit: '15' }, offsets: [-29 * H + 7, -27 * H, -25 * H] },
  ];
  for (const s of scenarios) {
    test.each(FORMATS)(`${s.name}: %s gives the list's rows as they are once stored, no more than the limit`, async (format) => {
      const p = await newProject();
      const hook = beforeStatement(sliceStatement(format), 2, () => storeMeanwhile(p, s.offsets));
      let ids: string[];
      try {
        ids = await exported(p, format, s.query);
      } finally {
        hook.restore();
      }
      expect(hook.ran()).toBe(true);
      if (s.query.limit) expect(ids.length).toBe(Number(s.query.limit));
      expect(ids).toEqual(await listed(p, s.query));
    });
  }
});

describe('rows erased while an export runs', () => {
  // 'gone' has 6 rows at the top of the busy hour, counted by the plan and erased before they are
  // read: the slice the limit cuts then holds fewer rows than planned, and the rest of the window
  // after it is read for the missing ones.
  const withGone = async () => {
    const p = await newProject();
    const gone = Array.from({ length: 6 }, (_, i) => at(-20 * H + 3_000_000 + i * 10_000));
    await f.ingest(p.token, gone.map((ms) => ({ event: 'view', distinct_id: 'gone', timestamp: new Date(ms), uuid: uuidv7(ms), properties: { tag: 'gone' } })));
    return p;
  };
  const erase = (p: Project) => async () => {
    await f.t.deps.storage.events.erasePersonEvents(p.id, { distinctIds: ['gone'], personIds: [] });
  };
  test.each(FORMATS)('%s still gives `limit` rows, those the list gives once they are erased', async (format) => {
    const p = await withGone();
    const hook = beforeStatement(sliceStatement(format), 2, erase(p));
    let ids: string[];
    try {
      ids = await exported(p, format, { limit: '15' });
    } finally {
      hook.restore();
    }
    expect(hook.ran()).toBe(true);
    expect(ids).toEqual(await listed(p, { limit: '15' }));
    expect(ids.length).toBe(15);
  });

  // An export reads the slice a limit cuts up to its last row's key (read first). Rows erased just
  // after that leave the slice short: the rest must then be read from just after the key, inside
  // the cut slice itself (rows of the key's time below it), without the rows above it again, and
  // also when the cut reaches the window's far end (`after`), where no slice was planned after it.
  const cases = [
    { format: 'csv', bounded: false },
    { format: 'csv', bounded: true },
    { format: 'parquet', bounded: false },
    { format: 'parquet', bounded: true },
  ] as const;
  test.each(cases)('$format, window bounded $bounded: rows erased once the cut key is read, the rest read from just after the key', async ({ format, bounded }) => {
    const p = await newProject();
    // Five rows of one millisecond, the newest of the busy hour, in list order (uuid descending):
    // kept, gone, gone, kept, kept. A limit of 7 (the newest hour's 4 first) is cut at the second gone one.
    const ms = at(-20 * H + 3_000_000);
    const head = uuidv7(ms).slice(0, 19);
    const uuid = (rank: number) => `${head}8000-${String(rank).padStart(12, '0')}`;
    const tied = ['kept', 'gone', 'gone', 'kept', 'kept'].map((who, i) => ({ event: 'view', distinct_id: who, timestamp: new Date(ms), uuid: uuid(5 - i), properties: { tag: who } }));
    await f.ingest(p.token, tied);
    const query = { limit: '7', ...(bounded ? { after: new Date(ms - 1).toISOString() } : {}) };
    const keyAt = (sql: string) => sql.startsWith('SELECT uuid, timestamp FROM') && /OFFSET/.test(sql);
    const hook = beforeStatement(keyAt, 1, erase(p), true);
    const { statements, restore } = recordStatements(f);
    // Slices of up to 100 rows: the tied rows' hour is one bucket, cut by the limit; with `after`
    // just below them it is clamped to the window's far end, so no slice is planned after it.
    // Without `after` the rest of the window is planned: the rows are hot (no file raises the
    // window's far end to their time).
    const sliceRows = f.t.deps.exportSlices;
    f.t.deps.exportSlices = { rows: 100, firstRows: 2 };
    let ids: string[];
    try {
      ids = await exported(p, format, query);
    } finally {
      f.t.deps.exportSlices = sliceRows;
      hook.restore();
      restore();
    }
    expect(hook.ran()).toBe(true);
    const expected = await listed(p, query);
    expect(expected.slice(4)).toEqual([uuid(5), uuid(2), uuid(1)]);
    expect(ids).toEqual(expected);
    if (format === 'csv') {
      // The newest hour, the cut slice up to its key, then the rest from just after it.
      const copies = statements.filter((s) => s.startsWith('COPY'));
      expect(copies.map((c) => (c.includes('uuid >=') ? 'cut' : c.includes('uuid <') ? 'rest' : 'whole'))).toEqual(['whole', 'cut', 'rest']);
    }
  });

  test('parquet of one part (the newest hour): the rest of the window read too, both joined into the file sent', async () => {
    // Limit 3 is cut in the newest hour (4 rows): one part, written straight to the file sent.
    // Two of its rows erased first: that part gives 2, the rest of the window the third.
    const p = await newProject();
    const { statements, restore } = recordStatements(f);
    const hook = beforeStatement(sliceStatement('parquet'), 1, async () => {
      await f.t.deps.storage.events.erasePersonEvents(p.id, { distinctIds: ['u2', 'u3'], personIds: [] });
    });
    let ids: string[];
    try {
      ids = await exported(p, 'parquet', { limit: '3' });
    } finally {
      hook.restore();
      restore();
    }
    expect(hook.ran()).toBe(true);
    expect(ids).toEqual(await listed(p, { limit: '3' }));
    expect(ids.length).toBe(3);
    const copies = statements.filter((s) => s.startsWith('COPY'));
    expect(copies.length).toBe(3);
    expect(copies[2]).toMatch(/read_parquet\(\[.*-part-0\.parquet', .*-part-1\.parquet'\]\)/);
  });
});

describe("a person's export", () => {
  test('reads the person copies the list reads, and gives the rows the list gives', async () => {
    const project = await f.t.deps.storage.management.createProject(f.t.account.organization.id, 'person copies', {});
    const p = { id: project.id, token: project.apiToken };
    // Three settled days (before NOW) of dora, eli and fay, interleaved.
    const base = Date.parse('2024-01-06T00:00:00Z');
    const people = ['dora', 'eli', 'fay'];
    await f.ingest(
      p.token,
      Array.from({ length: 90 }, (_, i) => {
        const ms = base + ((i * 7_919_000) % (3 * 24 * H)) + i;
        return { event: 'view', distinct_id: people[i % 3]!, timestamp: new Date(ms), uuid: uuidv7(ms), properties: { i } };
      }),
    );
    await f.t.deps.storage.events.awaitIntake(p.id, null);
    await f.t.deps.storage.events.compact();
    expect(await f.t.deps.storage.events.buildPersonCopies()).toBeGreaterThan(0);
    const dora = f.t.deps.storage.persons.findByDistinctId(p.id, 'dora')!;
    const queries: Array<Record<string, string>> = [{ distinct_id: 'eli' }, { distinct_id: 'fay', orderBy: '["timestamp"]', limit: '17' }, { person_id: dora.uuid, limit: '11' }];
    for (const query of queries) {
      const expected = await listed(p, query);
      expect(expected.length).toBeGreaterThan(4);
      for (const format of FORMATS) {
        const { statements, restore } = recordStatements(f);
        const ids = await exported(p, format, query);
        restore();
        expect({ format, query, ids }).toEqual({ format, query, ids: expected });
        expect({ format, query, byPerson: statements.some((s) => s.includes('by-person')) }).toEqual({ format, query, byPerson: true });
      }
    }
  });
});
