import { measureOf, quantile } from './_stats';
import { EVENTS_LIST_CASES, type HeadlineSamples, type LoadSample, type ServerSamples } from './_headline-types';
import type { BenchRow, Figure, LatencyBar, Measure, ThroughputBar } from './types';

/**
 * The headline's figures, chart data and table rows from its raw samples (pure: the report and
 * compare tests feed it fixed samples). Keys are stable: compare matches figures by them.
 */

const MB = 2 ** 20;

type Pick = (s: LoadSample) => number | null;
const of = (samples: LoadSample[] | undefined, pick: Pick): Measure | null | undefined => (samples ? measureOf(samples.map(pick)) : undefined);

function loadFigures(prefix: string, section: string, s: ServerSamples, withQueryable: boolean): Figure[] {
  const row = (key: string, name: string, unit: string, better: Figure['better'], pick: Pick, baselines = true): Figure => ({
    key: `${prefix}.${key}`,
    section,
    name,
    unit,
    better,
    value: of(s.real, pick) ?? null,
    ...(baselines && { bare: of(s.bare, pick), floor: of(s.floor, pick) }),
  });
  const eps = prefix === 'decide';
  return [
    eps ? row('rps', 'answered', 'req/s', 'higher', (x) => x.rps) : row('acknowledged', 'acknowledged', 'events/s', 'higher', (x) => x.eps),
    ...(withQueryable ? [row('queryable', 'queryable', 'events/s', 'higher', (x) => x.queryableEps, false)] : []),
    row('p50', 'p50 latency', 'ms', 'lower', (x) => x.p50),
    row('p99', 'p99 latency', 'ms', 'lower', (x) => x.p99),
    row('rss', 'peak RSS', 'MB', 'lower', (x) => x.peakMb),
  ];
}

/** A figure measured once (or per run of one server): no baselines. */
const plain = (key: string, section: string, name: string, unit: string, better: Figure['better'], samples: (number | null)[]): Figure => ({ key, section, name, unit, better, value: measureOf(samples) });

export function buildFigures(samples: HeadlineSamples): { figures: Figure[]; throughput: ThroughputBar[]; latency: LatencyBar[] } {
  const figures: Figure[] = [];
  const throughput: ThroughputBar[] = [];
  const latency: LatencyBar[] = [];
  const med = (m: Measure | null | undefined) => m?.median ?? null;
  const lat = (name: string, s: LoadSample[] | undefined) => {
    if (s) latency.push({ case: name, p50: med(measureOf(s.map((x) => x.p50))), p90: med(measureOf(s.map((x) => x.p90))), p99: med(measureOf(s.map((x) => x.p99))) });
  };
  const ingest: Array<['single' | 'batch', string, string]> = [
    ['single', 'Single-event capture (POST /capture/, 64 connections)', 'Single-event capture'],
    ['batch', '1 MB batches (POST /batch/, 4 connections)', '1 MB batches'],
  ];
  for (const [kind, section, short] of ingest) {
    const s = samples[kind];
    if (!s) continue;
    figures.push(...loadFigures(`capture.${kind}`, section, s, true));
    const eps = (x: LoadSample[] | undefined, pick: Pick = (y) => y.eps) => (x ? med(measureOf(x.map(pick))) : null);
    throughput.push({
      case: short,
      unit: 'events/s',
      bars: [
        ...(s.bare ? [{ label: 'bare Bun.serve', value: eps(s.bare) }, { label: 'durable floor', value: eps(s.floor) }] : []),
        { label: 'hogbase acknowledged', value: eps(s.real) },
        { label: 'hogbase queryable', value: eps(s.real, (y) => y.queryableEps) },
      ],
    });
    lat(short, s.real);
  }
  if (samples.decide) {
    const s = samples.decide;
    figures.push(...loadFigures('decide', '/decide/?v=2 with 20 flags (64 connections)', s, false));
    const rps = (x: LoadSample[] | undefined) => (x ? med(measureOf(x.map((y) => y.rps))) : null);
    throughput.push({ case: '/decide/ with 20 flags', unit: 'req/s', bars: [...(s.bare ? [{ label: 'bare Bun.serve', value: rps(s.bare) }] : []), { label: 'hogbase', value: rps(s.real) }] });
    lat('/decide/ with 20 flags', s.real);
  }
  const d = samples.dataset;
  if (d) {
    const n = d.events.toLocaleString('en-US');
    const loadSection = `Loading ${n} events (1 MB batches, 4 in flight)`;
    const acked = d.events / d.loadSeconds;
    const queryable = d.events / (d.loadSeconds + d.queryableS);
    figures.push(
      plain('load.acknowledged', loadSection, 'acknowledged', 'events/s', 'higher', [acked]),
      plain('load.queryable', loadSection, 'queryable', 'events/s', 'higher', [queryable]),
      plain('load.rss', loadSection, 'peak RSS', 'MB', 'lower', [d.loadPeakMb]),
    );
    throughput.push({ case: `Loading ${n} events`, unit: 'events/s', bars: [{ label: 'hogbase acknowledged', value: acked }, { label: 'hogbase queryable', value: queryable }] });
    const listSection = `Events list on ${n} events (GET /api/projects/:id/events/)`;
    for (const c of EVENTS_LIST_CASES) {
      const ms = d.queries[c.key];
      if (!ms) continue;
      figures.push(plain(`events.${c.key}`, listSection, c.name, 'ms', 'lower', ms));
      latency.push({ case: `events list: ${c.name}`, p50: quantile(ms, 0.5), p90: quantile(ms, 0.9), p99: quantile(ms, 0.99) });
    }
    const exportSection = `Export of every event (${n})`;
    const rowsPerS: Record<string, number | null> = {};
    for (const format of ['csv', 'parquet'] as const) {
      // A format with no run failed (see the notes): its figures stay in the table, not measured.
      const runs = d.exports[format];
      const m = measureOf(runs.map((r) => r.rows / r.seconds));
      rowsPerS[format] = med(m);
      figures.push(
        { key: `export.${format}.rows`, section: exportSection, name: `${format}: rows/s`, unit: 'rows/s', better: 'higher', value: m },
        plain(`export.${format}.mbs`, exportSection, `${format}: MB/s`, 'MB/s', 'higher', runs.map((r) => r.bytes / 1e6 / r.seconds)),
        plain(`export.${format}.rss`, exportSection, `${format}: peak RSS`, 'MB', 'lower', runs.map((r) => r.peakMb)),
      );
    }
    if (Object.keys(rowsPerS).length) throughput.push({ case: `Export of ${n} events`, unit: 'rows/s', bars: Object.entries(rowsPerS).map(([label, value]) => ({ label, value })) });
    const perMillion = (bytes: number | null, rows: number | null) => (bytes !== null && rows ? (bytes / rows) * 1e6 / MB : null);
    figures.push(
      plain('disk.total', 'Disk', 'DATA_DIR per million events', 'MiB', 'lower', [perMillion(d.diskBytes, d.events)]),
      plain('disk.parquet', 'Disk', 'Parquet files per million events', 'MiB', 'lower', [perMillion(d.parquetBytes, d.parquetRows)]),
    );
  }
  return { figures, throughput, latency };
}

/** The figures as the JSON's plain rows (what `printTable` and older readers know). */
export function figureRows(figures: readonly Figure[]): BenchRow[] {
  const r = (x: number | null | undefined) => (x === null || x === undefined ? null : Math.round(x * 100) / 100);
  return figures.map((f) => ({
    case: `${f.section}: ${f.name}`,
    unit: f.unit,
    hogbase: r(f.value?.median),
    min: r(f.value?.min),
    max: r(f.value?.max),
    rounds: f.value?.n ?? 0,
    bare: r(f.bare?.median),
    'durable floor': r(f.floor?.median),
  }));
}
