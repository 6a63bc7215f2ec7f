import { expect, test } from 'bun:test';
import { buildFigures, figureRows } from '../../bench/_headline-figures';
import type { HeadlineSamples, LoadSample } from '../../bench/_headline-types';

const load = (eps: number, p50: number, p99: number, peakMb: number, queryableEps: number | null = null): LoadSample => ({
  rps: eps,
  eps,
  p50,
  p90: (p50 + p99) / 2,
  p99,
  peakMb,
  queryableS: queryableEps === null ? null : 0.5,
  queryableEps,
  errors: 0,
});

const samples: HeadlineSamples = {
  single: {
    bare: [load(40000, 1, 5, 40), load(42000, 1, 6, 41)],
    floor: [load(20000, 2, 9, 42), load(22000, 2, 11, 43)],
    real: [load(10000, 5, 50, 300, 9000), load(12000, 7, 70, 320, 11000)],
  },
  batch: null,
  decide: { bare: [load(12000, 2, 8, 40)], real: [load(3000, 10, 90, 250)] },
  dataset: {
    events: 200_000,
    loadSeconds: 10,
    queryableS: 2.5,
    loadPeakMb: 700,
    queries: { latest: [40, 30, 50], person: [80, 60, 100, 70, 90] },
    exports: { csv: [{ seconds: 2, rows: 200_000, bytes: 260e6, peakMb: 500 }, { seconds: 4, rows: 200_000, bytes: 260e6, peakMb: 520 }], parquet: [] },
    diskBytes: 2 * 2 ** 20 * 200,
    parquetBytes: 170 * 2 ** 20,
    parquetRows: 1_000_000,
  },
};

test('the headline figures: hogbase with the baselines of its run, medians and spread, stable keys', () => {
  const { figures } = buildFigures(samples);
  expect(figureRows(figures)).toEqual([
    { case: 'Single-event capture (POST /capture/, 64 connections): acknowledged', unit: 'events/s', hogbase: 11000, min: 10000, max: 12000, rounds: 2, bare: 41000, 'durable floor': 21000 },
    { case: 'Single-event capture (POST /capture/, 64 connections): queryable', unit: 'events/s', hogbase: 10000, min: 9000, max: 11000, rounds: 2, bare: null, 'durable floor': null },
    { case: 'Single-event capture (POST /capture/, 64 connections): p50 latency', unit: 'ms', hogbase: 6, min: 5, max: 7, rounds: 2, bare: 1, 'durable floor': 2 },
    { case: 'Single-event capture (POST /capture/, 64 connections): p99 latency', unit: 'ms', hogbase: 60, min: 50, max: 70, rounds: 2, bare: 5.5, 'durable floor': 10 },
    { case: 'Single-event capture (POST /capture/, 64 connections): peak RSS', unit: 'MB', hogbase: 310, min: 300, max: 320, rounds: 2, bare: 40.5, 'durable floor': 42.5 },
    { case: '/decide/?v=2 with 20 flags (64 connections): answered', unit: 'req/s', hogbase: 3000, min: 3000, max: 3000, rounds: 1, bare: 12000, 'durable floor': null },
    { case: '/decide/?v=2 with 20 flags (64 connections): p50 latency', unit: 'ms', hogbase: 10, min: 10, max: 10, rounds: 1, bare: 2, 'durable floor': null },
    { case: '/decide/?v=2 with 20 flags (64 connections): p99 latency', unit: 'ms', hogbase: 90, min: 90, max: 90, rounds: 1, bare: 8, 'durable floor': null },
    { case: '/decide/?v=2 with 20 flags (64 connections): peak RSS', unit: 'MB', hogbase: 250, min: 250, max: 250, rounds: 1, bare: 40, 'durable floor': null },
    { case: 'Loading 200,000 events (1 MB batches, 4 in flight): acknowledged', unit: 'events/s', hogbase: 20000, min: 20000, max: 20000, rounds: 1, bare: null, 'durable floor': null },
    { case: 'Loading 200,000 events (1 MB batches, 4 in flight): queryable', unit: 'events/s', hogbase: 16000, min: 16000, max: 16000, rounds: 1, bare: null, 'durable floor': null },
    { case: 'Loading 200,000 events (1 MB batches, 4 in flight): peak RSS', unit: 'MB', hogbase: 700, min: 700, max: 700, rounds: 1, bare: null, 'durable floor': null },
    { case: 'Events list on 200,000 events (GET /api/projects/:id/events/): latest 100', unit: 'ms', hogbase: 40, min: 30, max: 50, rounds: 3, bare: null, 'durable floor': null },
    { case: "Events list on 200,000 events (GET /api/projects/:id/events/): a person's events (distinct_id)", unit: 'ms', hogbase: 80, min: 60, max: 100, rounds: 5, bare: null, 'durable floor': null },
    { case: 'Export of every event (200,000): csv: rows/s', unit: 'rows/s', hogbase: 75000, min: 50000, max: 100000, rounds: 2, bare: null, 'durable floor': null },
    { case: 'Export of every event (200,000): csv: MB/s', unit: 'MB/s', hogbase: 97.5, min: 65, max: 130, rounds: 2, bare: null, 'durable floor': null },
    { case: 'Export of every event (200,000): csv: peak RSS', unit: 'MB', hogbase: 510, min: 500, max: 520, rounds: 2, bare: null, 'durable floor': null },
    // No Parquet export succeeded: its figures are in the table, not measured.
    { case: 'Export of every event (200,000): parquet: rows/s', unit: 'rows/s', hogbase: null, min: null, max: null, rounds: 0, bare: null, 'durable floor': null },
    { case: 'Export of every event (200,000): parquet: MB/s', unit: 'MB/s', hogbase: null, min: null, max: null, rounds: 0, bare: null, 'durable floor': null },
    { case: 'Export of every event (200,000): parquet: peak RSS', unit: 'MB', hogbase: null, min: null, max: null, rounds: 0, bare: null, 'durable floor': null },
    { case: 'Disk: DATA_DIR per million events', unit: 'MiB', hogbase: 2000, min: 2000, max: 2000, rounds: 1, bare: null, 'durable floor': null },
    { case: 'Disk: Parquet files per million events', unit: 'MiB', hogbase: 170, min: 170, max: 170, rounds: 1, bare: null, 'durable floor': null },
  ]);
  expect(figures.map((f) => f.key)).toEqual([
    'capture.single.acknowledged',
    'capture.single.queryable',
    'capture.single.p50',
    'capture.single.p99',
    'capture.single.rss',
    'decide.rps',
    'decide.p50',
    'decide.p99',
    'decide.rss',
    'load.acknowledged',
    'load.queryable',
    'load.rss',
    'events.latest',
    'events.person',
    'export.csv.rows',
    'export.csv.mbs',
    'export.csv.rss',
    'export.parquet.rows',
    'export.parquet.mbs',
    'export.parquet.rss',
    'disk.total',
    'disk.parquet',
  ]);
});

test('the chart data: throughput next to the baselines, latency percentiles', () => {
  const { throughput, latency } = buildFigures(samples);
  expect(throughput).toEqual([
    {
      case: 'Single-event capture',
      unit: 'events/s',
      bars: [
        { label: 'bare Bun.serve', value: 41000 },
        { label: 'durable floor', value: 21000 },
        { label: 'hogbase acknowledged', value: 11000 },
        { label: 'hogbase queryable', value: 10000 },
      ],
    },
    { case: '/decide/ with 20 flags', unit: 'req/s', bars: [{ label: 'bare Bun.serve', value: 12000 }, { label: 'hogbase', value: 3000 }] },
    { case: 'Loading 200,000 events', unit: 'events/s', bars: [{ label: 'hogbase acknowledged', value: 20000 }, { label: 'hogbase queryable', value: 16000 }] },
    { case: 'Export of 200,000 events', unit: 'rows/s', bars: [{ label: 'csv', value: 75000 }, { label: 'parquet', value: null }] },
  ]);
  expect(latency).toEqual([
    { case: 'Single-event capture', p50: 6, p90: 33, p99: 60 },
    { case: '/decide/ with 20 flags', p50: 10, p90: 50, p99: 90 },
    { case: 'events list: latest 100', p50: 40, p90: 50, p99: 50 },
    { case: "events list: a person's events (distinct_id)", p50: 80, p90: 100, p99: 100 },
  ]);
});
