import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { DUCKDB_FILES, PARQUET_EXPORTS } from '../helpers/duckdb-only';
import { byKey, eventObject, NOW, openEventsFixture, recordStatements, relative, TRICKY_VALUE, VISIBLE, type EventsFixture } from './events-fixture';
import { uuidv7 } from '../../src/ids';
import { readParquet } from '../helpers/parquet';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { eventually } from '../helpers/cluster';
import { createTestApp, reopenTestApp } from '../helpers/test-app';

let f: EventsFixture;
beforeAll(async () => {
  f = await openEventsFixture();
});
afterAll(() => f.close());

const download = async (query: Record<string, string>) => {
  const res = await f.t.call('GET', f.path(query));
  return { status: res.status, headers: res.headers, text: await res.text() };
};

/** A small RFC 4180 reader, to check the export round-trips. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      i++;
    } else field += c;
  }
  expect(field).toBe('');
  return rows;
}

const HEADER = [
  'distinct_id', 'elements_chain', 'event', 'id',
  'person.distinct_ids.0', 'person.is_identified', 'person.properties.email', 'person.properties.name', 'person.properties.username',
  'properties.$anon_distinct_id', 'properties.$current_url', 'properties.$event_type', 'properties.$set', 'properties.$set_once',
  'properties.nested', 'properties.plan', 'properties.price', 'properties.quote"d,key', 'properties.tags', 'timestamp',
];

describe('format=csv', () => {
  test('a streamed attachment: sorted flattened header, one RFC 4180 record per event, newest first', async () => {
    const { status, headers, text } = await download({ format: 'csv' });
    expect(status).toBe(200);
    expect(headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(headers.get('content-disposition')).toBe('attachment; filename="events.csv"');
    expect(text.endsWith('\r\n')).toBe(true);
    const [header, ...rows] = parseCsv(text);
    expect(header).toEqual(HEADER);
    expect(rows.map((r) => r[3])).toEqual(VISIBLE.map((e) => e.uuid));
    const record = (key: string) => Object.fromEntries(HEADER.map((h, i) => [h, rows.find((r) => r[3] === byKey(key).uuid)![i]]));
    expect(record('a4')).toEqual({
      ...Object.fromEntries(HEADER.map((h) => [h, ''])),
      distinct_id: 'bob',
      event: 'signup',
      id: byKey('a4').uuid,
      'person.distinct_ids.0': 'bob',
      'person.is_identified': 'false',
      'properties.plan': 'free',
      'properties.price': '25.5',
      'properties.quote"d,key': TRICKY_VALUE,
      timestamp: '2024-01-08T12:00:00+00:00',
    });
    expect(record('a5')).toMatchObject({ 'properties.tags': '["x","y"]', 'properties.nested': '{"deep":true}', 'properties.price': '100' });
    expect(record('a3')).toMatchObject({
      elements_chain: byKey('a3').properties.$elements_chain,
      'person.distinct_ids.0': 'alice',
      'person.is_identified': 'true',
      'person.properties.email': 'alice@example.com',
      'person.properties.name': 'Alice',
      timestamp: '2024-01-07T12:00:00.123000+00:00',
    });
  });

  test('filters, limit, offset and ascending order apply', async () => {
    const ids = async (query: Record<string, string>) => parseCsv((await download({ format: 'csv', ...query })).text).slice(1).map((r) => r[3]);
    expect(await ids({ distinct_id: 'bob' })).toEqual([byKey('a5').uuid, byKey('a4').uuid]);
    expect(await ids({ limit: '2' })).toEqual([byKey('a6').uuid, byKey('a5').uuid]);
    expect(await ids({ limit: '2', offset: '1' })).toEqual([byKey('a5').uuid, byKey('a4').uuid]);
    expect(await ids({ orderBy: '["timestamp"]', limit: '2' })).toEqual([byKey('a1').uuid, byKey('a2').uuid]);
    expect(await ids({ before: '2030-01-01', limit: '1' })).toEqual([byKey('a7').uuid]);
  });

  test('nothing matching: the header alone', async () => {
    const { status, text } = await download({ format: 'csv', event: 'nope' });
    expect(status).toBe(200);
    expect(parseCsv(text)).toEqual([HEADER.filter((h) => !h.startsWith('properties.'))]);
  });

  test('with select: the selected columns', async () => {
    const { text } = await download({ format: 'csv', select: '["event","count()"]', where: '["event != \'$pageview\'"]' });
    expect(text).toBe('event,count()\r\n$autocapture,1\r\n$identify,1\r\npurchase,1\r\nsignup,1\r\n');
  });

  test('errors before the stream starts are ordinary 400s', async () => {
    const res = await f.t.json('GET', f.path({ format: 'csv', properties: 'nope' }));
    expect(res.status).toBe(400);
    expect(res.body.detail).toBe('Properties are unparsable!');
  });
});

describe('format=json', () => {
  const bodyOf = async (query: Record<string, string>) => {
    const res = await f.t.call('GET', f.path({ format: 'json', ...query }));
    return { status: res.status, headers: res.headers, body: JSON.parse(await res.text()) };
  };

  test("the list's pagination envelope, its results the same event objects, streamed", async () => {
    const { status, headers, body } = await bodyOf({});
    expect(status).toBe(200);
    expect(headers.get('content-type')).toBe('application/json');
    expect(headers.get('content-disposition')).toBe('attachment; filename="events.json"');
    // Streamed (no length known up front), as the export of any size is.
    expect(headers.get('content-length')).toBeNull();
    expect(body).toEqual({ results: VISIBLE.map((e) => eventObject(e)), next: null, previous: null, count: VISIBLE.length });
    // The same count as the list without format.
    expect((await f.list({})).body.count).toBe(VISIBLE.length);
  });

  test('limit: next is the keyset link to the rest (as the list gives it), null once nothing is left; an empty export', async () => {
    const one = await bodyOf({ limit: '2' });
    expect(one.body.results.map((e: { id: string }) => e.id)).toEqual([byKey('a6').uuid, byKey('a5').uuid]);
    expect(one.body.count).toBe(VISIBLE.length);
    expect(one.body.previous).toBeNull();
    const listed = await f.list({ limit: '2' });
    expect(one.body.next).toBe(listed.body.next.replace('?limit=2', '?format=json&limit=2'));
    const rest = await f.t.call('GET', relative(one.body.next));
    const restBody = JSON.parse(await rest.text());
    expect(restBody.results.map((e: { id: string }) => e.id)).toEqual(VISIBLE.slice(2, 4).map((e) => e.uuid));
    const exact = await bodyOf({ limit: String(VISIBLE.length) });
    expect(exact.body).toEqual({ results: VISIBLE.map((e) => eventObject(e)), next: null, previous: null, count: VISIBLE.length });
    const offset = await bodyOf({ limit: '2', offset: '2' });
    expect(offset.body.results.map((e: { id: string }) => e.id)).toEqual(VISIBLE.slice(2, 4).map((e) => e.uuid));
    expect(relative(offset.body.previous)).toBe(f.path({ format: 'json', limit: '2' }));
    expect((await bodyOf({ event: 'nope' })).body).toEqual({ results: [], next: null, previous: null, count: 0 });
  });

  test("with select: the select list's envelope, rows as arrays", async () => {
    const { body } = await bodyOf({ select: '["distinct_id","count()"]', orderBy: '["distinct_id"]' });
    expect(body).toEqual({
      columns: ['distinct_id', 'count()'],
      types: expect.any(Array),
      results: [['alice', 2], ['alice-anon', 1], ['bob', 2], ['carol', 1]],
      hasMore: false,
      next: null,
      previous: null,
    });
    const listed = await f.list({ select: '["distinct_id","count()"]', orderBy: '["distinct_id"]' });
    expect(body.types).toEqual(listed.body.types);
    const cut = await bodyOf({ select: '["distinct_id","count()"]', orderBy: '["distinct_id"]', limit: '3' });
    expect(cut.body.results).toEqual([['alice', 2], ['alice-anon', 1], ['bob', 2]]);
    expect(cut.body.hasMore).toBe(true);
    const next = JSON.parse(await (await f.t.call('GET', relative(cut.body.next))).text());
    expect(next.results).toEqual([['carol', 1]]);
    expect(next.hasMore).toBe(false);
  });

  test('many rows stream through several slices in order', async () => {
    const g = await openEventsFixture();
    try {
      const base = Date.parse('2024-01-01T00:00:00Z');
      const events = Array.from({ length: 3000 }, (_, i) => ({
        event: 'bulk',
        distinct_id: `d${i % 7}`,
        timestamp: new Date(base + i * 7_000),
        properties: { i, text: `row, "${i}"` },
        uuid: crypto.randomUUID(),
      }));
      for (let i = 0; i < events.length; i += 1000) await g.ingest(g.t.account.project.apiToken, events.slice(i, i + 1000));
      const json = (await (await g.t.call('GET', g.path({ format: 'json', event: 'bulk' }))).json()) as { results: Array<{ properties: { i: number } }>; count: number; next: null };
      expect(json.results.map((e) => e.properties.i)).toEqual(events.map((_, i) => 2999 - i));
      expect(json.count).toBe(3000);
      const cut = (await (await g.t.call('GET', g.path({ format: 'json', event: 'bulk', limit: '2500' }))).json()) as { results: Array<{ properties: { i: number } }>; next: string | null };
      expect(cut.results.map((e) => e.properties.i)).toEqual(events.slice(500).map((_, i) => 2999 - i));
      expect(cut.next).not.toBeNull();
      const csv = parseCsv(await (await g.t.call('GET', g.path({ format: 'csv', event: 'bulk', limit: '2500' }))).text());
      expect(csv.length).toBe(2501);
      const text = csv[0]!.indexOf('properties.text');
      expect(csv.slice(1).map((r) => r[text])).toEqual(events.slice(500).reverse().map((e) => e.properties.text));
    } finally {
      await g.close();
    }
  });
});

describe('format=csv from Parquet files with listed property keys', () => {
  test('the same header and rows whether the keys come from the per-file list or from reading the rows', async () => {
    const g = await openEventsFixture();
    try {
      const csv = async (query: Record<string, string>) => (await g.t.call('GET', g.path(query))).text();
      const queries: Array<Record<string, string>> = [{ format: 'csv' }, { format: 'csv', limit: '2' }, { format: 'csv', event: '$pageview' }, { format: 'csv', after: '2000-01-01T00:00:00Z' }];
      const before = await Promise.all(queries.map(csv));
      await g.t.deps.storage.events.compact(); // everything to Parquet, each file's keys listed
      const after = await Promise.all(queries.map(csv));
      expect(after).toEqual(before);
      expect(parseCsv(after[0] as string)[0]).toEqual(HEADER);
    } finally {
      await g.close();
    }
  });
});

describe('format=csv property columns', () => {
  test("each key's column holds that key's value: keys differing only in case, integer-like keys, paths' characters", async () => {
    const g = await openEventsFixture();
    try {
      const base = Date.parse('2024-01-08T00:00:00Z');
      const properties = { A: 'upper', a: 'lower', '10': 'ten', '2': 'two', 'b.c': 'dotted', 'x/y~z': 'slashed', '': 'empty', n: 1.5e3, t: true, z: null, o: { k: [1, 'v'] } };
      await g.ingest(g.t.account.project.apiToken, [{ event: 'keys', distinct_id: 'kim', timestamp: new Date(base), uuid: uuidv7(base), properties }]);
      const csv = async () => (await g.t.call('GET', g.path({ format: 'csv', event: 'keys' }))).text();
      const record = (text: string) => {
        const [header, row] = parseCsv(text);
        return Object.fromEntries((header as string[]).filter((h) => h.startsWith('properties.')).map((h) => [h, (row as string[])[(header as string[]).indexOf(h)]]));
      };
      const expected = {
        'properties.': 'empty', 'properties.10': 'ten', 'properties.2': 'two', 'properties.A': 'upper', 'properties.a': 'lower', 'properties.b.c': 'dotted',
        'properties.n': '1500', 'properties.o': '{"k":[1,"v"]}', 'properties.t': 'true', 'properties.x/y~z': 'slashed', 'properties.z': '',
      };
      expect(record(await csv())).toEqual(expected);
      await g.t.deps.storage.events.compact(); // from Parquet: the ordered scan where the files allow it
      expect(record(await csv())).toEqual(expected);
    } finally {
      await g.close();
    }
  });
});

/** `{"note":"\"z,…\""}` is 1,048,539 bytes of JSON: within the 1 MiB event limit. */
const LONG_NOTE = `"${'z,'.repeat(524_260)}"`;

describe.skipIf(DUCKDB_FILES.skip)(DUCKDB_FILES.label('exports from time-ordered Parquet files (no sort; CSV person columns spliced in)'), () => {
  test('byte for byte what the sorted path writes, tricky person values included', async () => {
    const g = await openEventsFixture();
    try {
      const base = Date.parse('2024-01-08T00:00:00Z');
      const events = [
        { event: '$identify', distinct_id: 'dora', timestamp: new Date(base), uuid: uuidv7(base), properties: { $set: { email: 'd,"o"\n#ra', name: '', username: 42 } } },
        { event: 'x', distinct_id: 'dora', timestamp: new Date(base + 1_000), uuid: uuidv7(base + 1_000), properties: { note: '#1,"two"' } },
        { event: 'y', distinct_id: 'e,"v"e', timestamp: new Date(base + 2_000), uuid: uuidv7(base + 2_000), properties: { note: 'plain' } },
        // A record longer than the 1 MiB the export reads at a time, from an event just within the
        // 1 MiB event limit: CSV doubles the note's quotes and adds the other columns.
        { event: 'z', distinct_id: 'zed', timestamp: new Date(base + 3_000), uuid: uuidv7(base + 3_000), properties: { note: LONG_NOTE } },
      ];
      await g.ingest(g.t.account.project.apiToken, events);
      const csv = async (query: Record<string, string>) => (await g.t.call('GET', g.path(query))).text();
      // With a limit, the slice it cuts is read up to its last row's key, not sorted and cut.
      const queries: Array<Record<string, string>> = [{ format: 'csv' }, { format: 'csv', event: 'x' }, { format: 'csv', after: '2024-01-07T00:00:00Z' }, { format: 'csv', limit: '2' }, { format: 'csv', limit: '3', offset: '1' }];
      const sorted = await Promise.all(queries.map(csv)); // hot rows: DuckDB sorts and joins
      const sortedJson = await csv({ format: 'json' });
      await g.t.deps.storage.events.compact();
      const { statements, restore } = recordStatements(g);
      const spliced = await Promise.all(queries.map(csv));
      // Every slice was written by a plain scan, the ones the limits cut too: no sort, no person join.
      const copies = statements.filter((s) => s.startsWith('COPY'));
      expect(copies.length).toBeGreaterThanOrEqual(queries.length);
      for (const s of copies) expect(s).not.toMatch(/ORDER BY|JOIN/);
      expect(spliced).toEqual(sorted);
      // Filtered by nothing but time, a slice's scan needs no plan check; filtered, it does.
      statements.length = 0;
      await csv({ format: 'csv' });
      expect(statements.filter((s) => s.startsWith('EXPLAIN'))).toEqual([]);
      await csv({ format: 'csv', event: 'x' });
      expect(statements.filter((s) => s.startsWith('EXPLAIN')).length).toBeGreaterThan(0);
      // A JSON export reads the same way, and gives the same body.
      statements.length = 0;
      expect(await csv({ format: 'json' })).toBe(sortedJson);
      const reads = statements.filter((s) => s.startsWith('SELECT uuid, event, distinct_id, properties'));
      expect(reads.length).toBeGreaterThan(0);
      for (const s of reads) expect(s).not.toMatch(/ORDER BY|JOIN/);
      restore();
      const [header, ...rows] = parseCsv(spliced[0] as string);
      const col = (name: string) => (header as string[]).indexOf(name);
      const dora = rows.find((r) => r[col('event')] === 'x') as string[];
      expect([col('person.distinct_ids.0'), col('person.is_identified'), col('person.properties.email'), col('person.properties.name'), col('person.properties.username')].map((i) => dora[i])).toEqual([
        'dora', 'false', 'd,"o"\n#ra', '', '42',
      ]);
      expect(rows.find((r) => r[col('event')] === 'y')?.[col('distinct_id')]).toBe('e,"v"e');
      expect(rows.find((r) => r[col('event')] === 'z')?.[col('properties.note')]).toBe(LONG_NOTE);
      // Longer than 1 MiB even without the person columns (under 32 characters here), as the slice file holds it.
      expect(Math.max(...spliced[0]!.split('\r\n').map((record) => record.length))).toBeGreaterThan(1024 * 1024 + 32);
    } finally {
      await g.close();
    }
  });
});

const parquetOf = async (query: Record<string, string>) => {
  const res = await f.t.call('GET', f.path({ format: 'parquet', ...query }));
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/vnd.apache.parquet');
  expect(res.headers.get('content-disposition')).toBe('attachment; filename="events.parquet"');
  return readParquet(new Uint8Array(await res.arrayBuffer()));
};

describe.skipIf(PARQUET_EXPORTS.skip)(PARQUET_EXPORTS.label('format=parquet'), () => {
  test('typed columns that match the csv and json exports row for row', async () => {
    const { rows, columns } = await parquetOf({});
    expect(columns).toEqual([
      { name: 'id', type: 'VARCHAR' },
      { name: 'distinct_id', type: 'VARCHAR' },
      { name: 'event', type: 'VARCHAR' },
      { name: 'timestamp', type: 'TIMESTAMP' },
      { name: 'properties', type: 'VARCHAR' },
      { name: 'elements_chain', type: 'VARCHAR' },
    ]);
    const json = JSON.parse(await (await f.t.call('GET', f.path({ format: 'json' }))).text()) as { results: Array<ReturnType<typeof eventObject>> };
    expect(rows.map((r) => ({ id: r.id, distinct_id: r.distinct_id, event: r.event, timestamp: r.timestamp, properties: JSON.parse(String(r.properties)), elements_chain: r.elements_chain }))).toEqual(
      json.results.map((e) => ({ id: e.id, distinct_id: e.distinct_id, event: e.event, timestamp: new Date(e.timestamp), properties: e.properties, elements_chain: e.elements_chain })),
    );
    const [header, ...csv] = parseCsv(await (await f.t.call('GET', f.path({ format: 'csv' }))).text());
    const col = (name: string) => header!.indexOf(name);
    expect(rows.map((r) => [r.id, r.event, (r.timestamp as Date).getTime(), r.properties ? Object.keys(JSON.parse(String(r.properties))).length : 0])).toEqual(
      csv.map((r) => [r[col('id')], r[col('event')], Date.parse(r[col('timestamp')]!), header!.filter((h, i) => h.startsWith('properties.') && r[i] !== '').length]),
    );
    expect(rows.map((r) => r.id)).toEqual(VISIBLE.map((e) => e.uuid));
  });

  test('an export of several slices is one file, every row in order: sorted slices written one at a time and joined by a plain scan, time-ordered files scanned at once', async () => {
    const g = await openEventsFixture();
    try {
      const base = Date.parse('2024-01-05T00:00:00Z');
      // ~6 hours of events: a `limit` ending inside the fifth hour makes two slices (the hours
      // before it, then the hour it cuts), as a long export makes many.
      const events = Array.from({ length: 3000 }, (_, i) => ({
        event: 'bulk',
        distinct_id: `d${i % 7}`,
        timestamp: new Date(base + i * 7_000),
        properties: { i },
        uuid: uuidv7(base + i),
      }));
      for (let i = 0; i < events.length; i += 1000) await g.ingest(g.t.account.project.apiToken, events.slice(i, i + 1000));
      const newestFirst = [...events].reverse();
      const exported = async (query: Record<string, string>) => {
        const res = await g.t.call('GET', g.path({ format: 'parquet', event: 'bulk', ...query }));
        expect(res.status).toBe(200);
        return (await readParquet(new Uint8Array(await res.arrayBuffer()), 'id')).rows.map((r) => r.id);
      };
      const exportInOrder = async () => {
        const { statements, restore } = recordStatements(g);
        try {
          expect(await exported({ limit: '2500' })).toEqual(newestFirst.slice(0, 2500).map((e) => e.uuid));
          return statements.filter((s) => s.startsWith('COPY'));
        } finally {
          restore();
        }
      };
      // Hot rows: each slice sorted into a part file, the last COPY joins the parts without a sort.
      const sorted = await exportInOrder();
      expect(sorted.length).toBe(3);
      expect(sorted[2]).toMatch(/read_parquet\(\[.*-part-0\.parquet', .*-part-1\.parquet'\]\)/);
      expect(sorted[2]).not.toMatch(/ORDER BY/);
      expect(await exported({ limit: '2500', orderBy: '["timestamp"]' })).toEqual([...newestFirst].reverse().slice(0, 2500).map((e) => e.uuid));
      expect(await exported({})).toEqual(newestFirst.map((e) => e.uuid));
      // Time-ordered files: the slices, the one the limit cuts included, are one scan into the file sent.
      await g.t.deps.storage.events.compact();
      const scanned = await exportInOrder();
      expect(scanned.length).toBe(1);
      expect(scanned[0]).not.toMatch(/ORDER BY|part-/);
      expect(await exported({ limit: '2500', orderBy: '["timestamp"]' })).toEqual([...newestFirst].reverse().slice(0, 2500).map((e) => e.uuid));
      expect(await exported({})).toEqual(newestFirst.map((e) => e.uuid));
    } finally {
      await g.close();
    }
  });

  test('filters, limit, offset and order apply; nothing matching is an empty file with the same columns', async () => {
    const cut = await parquetOf({ limit: '2', offset: '1', orderBy: '["timestamp"]' });
    expect(cut.rows.map((r) => r.id)).toEqual([...VISIBLE].reverse().slice(1, 3).map((e) => e.uuid));
    const none = await parquetOf({ event: 'nope' });
    expect(none.rows).toEqual([]);
    expect(none.columns.map((c) => c.type)).toEqual(['VARCHAR', 'VARCHAR', 'VARCHAR', 'TIMESTAMP', 'VARCHAR', 'VARCHAR']);
  });

  test('with select: the selected columns, named and typed as selected', async () => {
    const { rows, columns } = await parquetOf({ select: '["distinct_id","count()","max(timestamp)"]', orderBy: '["distinct_id"]' });
    expect(columns).toEqual([
      { name: 'distinct_id', type: 'VARCHAR' },
      { name: 'count()', type: 'BIGINT' },
      { name: 'max(timestamp)', type: expect.stringMatching(/^TIMESTAMP/) },
    ]);
    expect(rows.map((r) => [r.distinct_id, Number(r['count()'])])).toEqual([['alice', 2], ['alice-anon', 1], ['bob', 2], ['carol', 1]]);
  });

  test('with select: a property is typed by its definition (Numeric DOUBLE, Boolean BOOLEAN, DateTime TIMESTAMP), properties stay JSON text', async () => {
    const project = await f.t.deps.storage.management.createProject(f.t.account.organization.id, 'Typed export', {});
    const at = (hours: number) => new Date(NOW.getTime() - hours * 3_600_000);
    const typed = (key: string, distinctId: string, hours: number, properties: Record<string, unknown>) => ({ key, event: 'view', distinct_id: distinctId, timestamp: at(hours), properties, uuid: uuidv7(at(hours).getTime()) });
    await f.ingest(project.apiToken, [
      typed('t1', 'dana', 3, { $screen_width: 1920, is_pro: true, signup: '2024-01-03T10:00:00+02:00', plan: 'pro', $set: { age: 41 } }),
      typed('t2', 'dana', 2, { $screen_width: '1280.5', is_pro: 'false', signup: '2024-01-05', plan: 'free' }),
      typed('t3', 'eli', 1, { $screen_width: 'wide', signup: 'soon', plan: 7 }),
    ]);
    const select = ['timestamp', 'properties.$screen_width', 'properties.is_pro', 'properties.signup', 'properties.plan', 'person.properties.age', 'toFloat(properties.$screen_width) / 2 AS half'];
    const res = await f.t.call('GET', `/api/projects/${project.id}/events/?${new URLSearchParams({ format: 'parquet', select: JSON.stringify(select), orderBy: '["timestamp"]' })}`);
    expect(res.status).toBe(200);
    const { rows, columns } = await readParquet(new Uint8Array(await res.arrayBuffer()));
    expect(columns).toEqual([
      { name: 'timestamp', type: 'TIMESTAMP' },
      { name: 'properties.$screen_width', type: 'DOUBLE' },
      { name: 'properties.is_pro', type: 'BOOLEAN' },
      { name: 'properties.signup', type: 'TIMESTAMP' },
      { name: 'properties.plan', type: 'VARCHAR' },
      { name: 'person.properties.age', type: 'DOUBLE' },
      { name: 'half', type: 'DOUBLE' },
    ]);
    expect(rows).toEqual([
      { timestamp: at(3), 'properties.$screen_width': 1920, 'properties.is_pro': true, 'properties.signup': new Date('2024-01-03T08:00:00Z'), 'properties.plan': 'pro', 'person.properties.age': 41, half: 960 },
      { timestamp: at(2), 'properties.$screen_width': 1280.5, 'properties.is_pro': false, 'properties.signup': new Date('2024-01-05T00:00:00Z'), 'properties.plan': 'free', 'person.properties.age': 41, half: 640.25 },
      { timestamp: at(1), 'properties.$screen_width': null, 'properties.is_pro': null, 'properties.signup': null, 'properties.plan': '7', 'person.properties.age': null, half: null },
    ]);
    const whole = await readParquet(new Uint8Array(await (await f.t.call('GET', `/api/projects/${project.id}/events/?format=parquet&orderBy=${encodeURIComponent('["timestamp"]')}`)).arrayBuffer()));
    expect(whole.columns.find((c) => c.name === 'properties')).toEqual({ name: 'properties', type: 'VARCHAR' });
    expect(whole.rows.map((r) => JSON.parse(String(r.properties)).$screen_width)).toEqual([1920, '1280.5', 'wide']);
  });

  test('errors before the file is written are ordinary 400s; an unknown format is refused', async () => {
    const res = await f.t.json('GET', f.path({ format: 'parquet', properties: 'nope' }));
    expect(res.status).toBe(400);
    expect(res.body.detail).toBe('Properties are unparsable!');
    const bad = await f.t.json('GET', f.path({ format: 'avro' }));
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'invalid_choice', detail: '"avro" is not a valid choice: use csv, json, ndjson or parquet.', attr: 'format' });
  });
});

describe('format=ndjson', () => {
  const linesOf = async (query: Record<string, string>) => {
    const res = await f.t.call('GET', f.path({ format: 'ndjson', ...query }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-ndjson');
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="events.ndjson"');
    const text = await res.text();
    if (text) expect(text.endsWith('\n')).toBe(true);
    return text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
  };

  test("one event object a line, the json export's results", async () => {
    const json = JSON.parse(await (await f.t.call('GET', f.path({ format: 'json' }))).text());
    expect(await linesOf({})).toEqual(json.results);
    expect(await linesOf({})).toEqual(VISIBLE.map((e) => eventObject(e)));
    expect(await linesOf({ limit: '2', offset: '2' })).toEqual(VISIBLE.slice(2, 4).map((e) => eventObject(e)));
    expect(await linesOf({ event: 'nope' })).toEqual([]);
  });

  test('with select: one row (a JSON array) a line', async () => {
    expect(await linesOf({ select: '["distinct_id","count()"]', orderBy: '["distinct_id"]' })).toEqual([['alice', 2], ['alice-anon', 1], ['bob', 2], ['carol', 1]]);
  });
});

test('the OpenAPI document lists the export formats', async () => {
  const spec = (await f.t.json('GET', '/swagger/json')).body;
  const format = spec.paths['/api/projects/{project_id}/events/'].get.parameters.find((p: { name: string }) => p.name === 'format');
  expect(format.schema.enum).toEqual(['csv', 'json', 'ndjson', 'parquet']);
  expect(format.description).toContain('parquet: a zstd Parquet file');
});

test.skipIf(PARQUET_EXPORTS.skip)(PARQUET_EXPORTS.label('exports write their temporary files in DATA_DIR/exports and leave none there, sent or cancelled'), async () => {
  const dir = join(f.t.dataDir, 'exports');
  const recorded = recordStatements(f);
  try {
    await (await f.t.call('GET', f.path({ format: 'parquet' }))).arrayBuffer();
    await (await f.t.call('GET', f.path({ format: 'csv' }))).arrayBuffer();
    expect(await readdir(dir)).toEqual([]);
    const cancelled = await f.t.call('GET', f.path({ format: 'parquet' }));
    const reader = cancelled.body!.getReader();
    await reader.read();
    await reader.cancel();
    expect(await eventually(() => readdir(dir), (names) => names.length === 0, 5_000)).toEqual([]);
  } finally {
    recorded.restore();
  }
  const targets = recorded.statements.flatMap((sql) => [...sql.matchAll(/\bTO '([^']+)'/g)].map((m) => m[1] as string));
  expect(targets.filter((to) => to.endsWith('.parquet')).length).toBeGreaterThanOrEqual(2);
  expect(targets.filter((to) => to.endsWith('.csv')).length).toBeGreaterThanOrEqual(1);
  expect(targets.filter((to) => !to.startsWith(`${dir}/events-export-`))).toEqual([]);
});

test('a restarted server empties DATA_DIR/exports (a process killed during an export leaves its files there)', async () => {
  const t = await createTestApp();
  try {
    const dir = join(t.dataDir, 'exports');
    await writeFile(join(dir, 'events-export-0123456789abcdef.parquet'), 'left by a killed process');
    await mkdir(join(dir, 'events-export-dir'));
    const again = await reopenTestApp(t);
    try {
      expect(await readdir(dir)).toEqual([]);
    } finally {
      await again.close();
    }
  } catch (error) {
    await t.close();
    throw error;
  }
});
