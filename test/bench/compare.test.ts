import { describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compareMeasures, compareRuns, compareText, figuresOf, renderCompareHtml } from '../../bench/_compare';
import type { Measure, RunFile } from '../../bench/types';

const fixture = (name: string): RunFile => JSON.parse(readFileSync(join(import.meta.dir, '../fixtures/bench', name), 'utf8'));
const a = fixture('run-a.json');
const b = fixture('run-b.json');
const runs = { a, b, aName: 'run-a.json', bName: 'run-b.json' };
const m = (min: number, median: number, max: number): Measure => ({ median, min, max, n: 3, samples: [min, median, max] });
const one = (v: number): Measure => ({ median: v, min: v, max: v, n: 1, samples: [v] });

describe('compareMeasures: a change within the spread of either run is no change', () => {
  test.each([
    ['B above A, outside both spreads, higher is better', m(10, 11, 12), m(15, 15.5, 16), 'higher', 'better'],
    ['B above A, outside both spreads, lower is better', m(10, 11, 12), m(15, 15.5, 16), 'lower', 'worse'],
    ["B's median inside A's spread", m(50, 60, 70), m(65, 66, 67), 'lower', 'no change'],
    ["A's median inside B's spread (A's own spread narrow)", m(30, 30.5, 31), m(28, 34, 35), 'higher', 'no change'],
    ['B below A, outside both spreads', m(40, 44, 48), m(20, 22, 24), 'lower', 'better'],
    ['equal single values', one(5), one(5), 'higher', 'no change'],
  ] as const)('%s', (_name, x, y, better, verdict) => {
    expect(compareMeasures(x, y, better).verdict).toBe(verdict);
  });

  test('the band is the union of both runs\' spreads, as relative changes of A', () => {
    const r = compareMeasures(m(30000, 30500, 31000), m(28000, 30600, 33000), 'higher');
    expect(r.band!.map((x) => Math.round(x * 10000) / 10000)).toEqual([-0.0727, 0.0929]);
    expect(Math.round(r.change! * 10000) / 10000).toBe(0.0033);
  });
});

test('figuresOf flattens the headline (with its baselines) and the numeric cells of other benches', () => {
  expect(figuresOf(a).map((f) => [f.key, f.better, f.value?.median ?? null])).toEqual([
    ['capture.single.acknowledged', 'higher', 11000],
    ['capture.single.acknowledged@bare', 'higher', 42000],
    ['capture.single.acknowledged@floor', 'higher', 21000],
    ['capture.single.queryable', 'higher', 10000],
    ['capture.single.p99', 'lower', 60],
    ['capture.single.p99@bare', 'lower', 12],
    ['capture.single.p99@floor', 'lower', 22],
    ['capture.batch.acknowledged', 'higher', 30500],
    ['capture.batch.acknowledged@bare', 'higher', 310000],
    ['capture.batch.acknowledged@floor', 'higher', 160000],
    ['events.latest', 'lower', 44],
    ['events.person', 'lower', 100],
    ['disk.total', 'lower', 400],
    ['ingest|POST /capture/ single [autocannon]|hogbase durable|events/s', 'higher', 20000],
    ['ingest|POST /capture/ single [autocannon]|hogbase durable|p99 ms', 'lower', 18],
    ['ingest|POST /batch/ ~1 MB [autocannon]|hogbase durable|events/s', 'higher', 40000],
    ['ingest|POST /batch/ ~1 MB [autocannon]|hogbase durable|peak RSS MB', 'lower', 900],
  ]);
});

test('compare prints every figure of two runs with its change, noise band and verdict', () => {
  expect(compareText(compareRuns(a, b), runs)).toBe(EXPECTED_TEXT);
});

test('compare comparing a run with itself finds no change anywhere', () => {
  const rows = compareRuns(a, a).filter((r) => r.verdict !== 'not measured');
  expect(new Set(rows.map((r) => r.verdict))).toEqual(new Set(['no change']));
});

test('the comparison HTML has every figure as a row and a bar with its noise band per measured change', () => {
  const html = renderCompareHtml(compareRuns(a, b), runs);
  const rows = [...html.matchAll(/<tr class="([^"]+)"><td>([^<]+)<\/td>/g)].map((x) => [x[1], x[2]]);
  expect(rows).toEqual([
    ['better', 'Single-event capture (POST /capture/, 64 connections): acknowledged'],
    ['no-change', 'Single-event capture (POST /capture/, 64 connections): acknowledged (bare Bun.serve)'],
    ['no-change', 'Single-event capture (POST /capture/, 64 connections): acknowledged (durable floor)'],
    ['worse', 'Single-event capture (POST /capture/, 64 connections): queryable'],
    ['no-change', 'Single-event capture (POST /capture/, 64 connections): p99 latency'],
    ['no-change', 'Single-event capture (POST /capture/, 64 connections): p99 latency (bare Bun.serve)'],
    ['worse', 'Single-event capture (POST /capture/, 64 connections): p99 latency (durable floor)'],
    ['no-change', '1 MB batches (POST /batch/, 4 connections): acknowledged'],
    ['no-change', '1 MB batches (POST /batch/, 4 connections): acknowledged (bare Bun.serve)'],
    ['no-change', '1 MB batches (POST /batch/, 4 connections): acknowledged (durable floor)'],
    ['better', 'Events list on 1,000 events (GET /api/projects/:id/events/): latest 100'],
    ['only-in-A', 'Events list on 1,000 events (GET /api/projects/:id/events/): a person&#39;s events (distinct_id)'],
    ['not-measured', 'Disk: DATA_DIR per million events'],
    ['no-change', 'ingest: POST /capture/ single [autocannon] (hogbase durable): events/s'],
    ['worse', 'ingest: POST /capture/ single [autocannon] (hogbase durable): p99 ms'],
    ['worse', 'ingest: POST /batch/ ~1 MB [autocannon] (hogbase durable): events/s'],
    ['better', 'ingest: POST /batch/ ~1 MB [autocannon] (hogbase durable): peak RSS MB'],
    ['only-in-B', 'Events list on 1,000 events (GET /api/projects/:id/events/): property filter (plan = enterprise)'],
  ]);
  // 15 figures measured in both runs: a bar each; the 11 with rounds on either side a noise band too.
  expect(html.match(/<rect class="bar"/g)?.length).toBe(15);
  expect(html.match(/<rect class="band"/g)?.length).toBe(11);
  expect(html).toContain('<b>3 better, 4 worse, 8 no change, 1 only in A, 1 only in B, 1 not measured (of 18 figures)</b>');
  expect(html).not.toContain('<script');
});

const EXPECTED_TEXT = `A run-a.json: 2026-11-20T10:00:00.000Z (npm run bench -- headline --events 1k) on Test CPU 9000, 2 cores, 23.5 GB, Bun 1.4.4
B run-b.json: 2026-11-26T10:00:00.000Z (npm run bench -- headline --events 1k) on Test CPU 9000, 2 cores, 23.5 GB, Bun 1.4.4
note: B ran on a busy machine (other processes: 0.9 of 2 cores on average)

Figure                                                                                           | unit        | A [spread]                | B [spread]                | change | noise band     | verdict
-------------------------------------------------------------------------------------------------|-------------|---------------------------|---------------------------|--------|----------------|-------------
Single-event capture (POST /capture/, 64 connections): acknowledged                              | events/s    | 11,000 [10,000–12,000]    | 15,500 [15,000–16,000]    | +40.9% | -9.1%…+9.1%    | better
Single-event capture (POST /capture/, 64 connections): acknowledged (bare Bun.serve)             | events/s    | 42,000 [40,000–44,000]    | 42,000 [41,000–43,000]    | 0.0%   | -4.8%…+4.8%    | no change
Single-event capture (POST /capture/, 64 connections): acknowledged (durable floor)              | events/s    | 21,000 [20,000–22,000]    | 21,000 [20,500–21,500]    | 0.0%   | -4.8%…+4.8%    | no change
Single-event capture (POST /capture/, 64 connections): queryable                                 | events/s    | 10,000 [9,000–11,000]     | 7,500 [7,000–8,000]       | -25.0% | -10.0%…+10.0%  | worse
Single-event capture (POST /capture/, 64 connections): p99 latency                               | ms          | 60.0 [50.0–70.0]          | 66.0 [65.0–67.0]          | +10.0% | -16.7%…+16.7%  | no change
Single-event capture (POST /capture/, 64 connections): p99 latency (bare Bun.serve)              | ms          | 12.0 [10.0–14.0]          | 11.0 [10.0–12.0]          | -8.3%  | -16.7%…+16.7%  | no change
Single-event capture (POST /capture/, 64 connections): p99 latency (durable floor)               | ms          | 22.0 [20.0–24.0]          | 31.0 [30.0–32.0]          | +40.9% | -9.1%…+9.1%    | worse
1 MB batches (POST /batch/, 4 connections): acknowledged                                         | events/s    | 30,500 [30,000–31,000]    | 30,600 [28,000–33,000]    | +0.3%  | -7.3%…+9.3%    | no change
1 MB batches (POST /batch/, 4 connections): acknowledged (bare Bun.serve)                        | events/s    | 310,000 [300,000–320,000] | 305,000 [300,000–310,000] | -1.6%  | -3.2%…+3.2%    | no change
1 MB batches (POST /batch/, 4 connections): acknowledged (durable floor)                         | events/s    | 160,000 [150,000–170,000] | 160,000 [155,000–165,000] | 0.0%   | -6.3%…+6.3%    | no change
Events list on 1,000 events (GET /api/projects/:id/events/): latest 100                          | ms          | 44.0 [40.0–48.0]          | 22.0 [20.0–24.0]          | -50.0% | -9.1%…+10.0%   | better
Events list on 1,000 events (GET /api/projects/:id/events/): a person's events (distinct_id)     | ms          | 100 [90.0–110]            | –                         | –      | –              | only in A
Disk: DATA_DIR per million events                                                                | MiB         | 400                       | –                         | –      | –              | not measured
ingest: POST /capture/ single [autocannon] (hogbase durable): events/s                           | events/s    | 20,000                    | 20,000                    | 0.0%   | none (1 round) | no change
ingest: POST /capture/ single [autocannon] (hogbase durable): p99 ms                             | p99 ms      | 18.0                      | 25.0                      | +38.9% | none (1 round) | worse
ingest: POST /batch/ ~1 MB [autocannon] (hogbase durable): events/s                              | events/s    | 40,000                    | 30,000                    | -25.0% | none (1 round) | worse
ingest: POST /batch/ ~1 MB [autocannon] (hogbase durable): peak RSS MB                           | peak RSS MB | 900                       | 800                       | -11.1% | none (1 round) | better
Events list on 1,000 events (GET /api/projects/:id/events/): property filter (plan = enterprise) | ms          | –                         | 80.0 [70.0–90.0]          | –      | –              | only in B

3 better, 4 worse, 8 no change, 1 only in A, 1 only in B, 1 not measured (of 18 figures)`;

test('runs unlike in size, rounds or machine load are said so above the table', () => {
  const bigger = structuredClone(b);
  const h = bigger.reports[0].headline!;
  h.options.events = 10_000_000;
  h.options.rounds = 5;
  const text = compareText(compareRuns(a, bigger), { a, b: bigger, aName: 'run-a.json', bName: 'run-b.json' });
  expect(text.split('\n').filter((line) => line.startsWith('note: '))).toEqual([
    'note: the runs differ in size: A 1,000 events, B 10,000,000: the events list, exports and disk are not like for like',
    'note: the runs differ in rounds: A 3 of 3 s, B 5 of 3 s',
    'note: B ran on a busy machine (other processes: 0.9 of 2 cores on average)',
  ]);
});
