import { page } from './_report-html';
import { formatNumber, formatPercent, formatSpread, textTable } from './_stats';
import { changeBars, escapeXml } from './_svg';
import type { Better, Measure, RunFile } from './types';

/**
 * `npm run bench -- compare A.json B.json`: the change of every figure from run A to run B,
 * with its noise band. A change is "no change" when B's median lies within A's spread (its
 * lowest to highest round) or A's median within B's: either run alone could have given it.
 * Headline figures carry their spread; other benches' rows carry medians only (one value: no band).
 */

export interface ComparableFigure {
  key: string;
  label: string;
  unit: string;
  better: Better;
  value: Measure | null;
}

export type Verdict = 'better' | 'worse' | 'no change' | 'only in A' | 'only in B' | 'not measured';

export interface CompareRow {
  key: string;
  label: string;
  unit: string;
  better: Better;
  a: Measure | null;
  b: Measure | null;
  /** B's median over A's, minus one. */
  change: number | null;
  /** The relative changes that count as no change, from both runs' spreads. */
  band: [number, number] | null;
  verdict: Verdict;
}

const single = (v: number): Measure => ({ median: v, min: v, max: v, n: 1, samples: [v] });

/** Columns of other benches' rows that describe a case rather than measure it. */
const NOT_FIGURES = /^(target.*|statements|rows|queries|met)$/;
const LOWER_IS_BETTER = /(ms|µs|rss|mb\b|after|errors|non-?2|seconds| s$|_s$)/i;

/** Every figure of a run: the headline's (hogbase and its baselines), then other benches' numeric cells. */
export function figuresOf(run: RunFile): ComparableFigure[] {
  const out: ComparableFigure[] = [];
  for (const report of run.reports) {
    if (report.headline) {
      for (const f of report.headline.figures) {
        const label = `${f.section}: ${f.name}`;
        out.push({ key: f.key, label, unit: f.unit, better: f.better, value: f.value });
        if (f.bare !== undefined) out.push({ key: `${f.key}@bare`, label: `${label} (bare Bun.serve)`, unit: f.unit, better: f.better, value: f.bare });
        if (f.floor !== undefined) out.push({ key: `${f.key}@floor`, label: `${label} (durable floor)`, unit: f.unit, better: f.better, value: f.floor });
      }
      continue;
    }
    for (const row of report.rows) {
      const who = typeof row.server === 'string' ? ` (${row.server})` : '';
      for (const [column, v] of Object.entries(row)) {
        if (typeof v !== 'number' || NOT_FIGURES.test(column)) continue;
        out.push({
          key: `${report.name}|${row.case}|${row.server ?? ''}|${column}`,
          label: `${report.name}: ${row.case}${who}: ${column}`,
          unit: column,
          better: LOWER_IS_BETTER.test(column) ? 'lower' : 'higher',
          value: single(v),
        });
      }
    }
  }
  return out;
}

/** The verdict and band of one figure measured in both runs. */
export function compareMeasures(a: Measure, b: Measure, better: Better): Pick<CompareRow, 'change' | 'band' | 'verdict'> {
  const change = a.median !== 0 ? b.median / a.median - 1 : b.median === 0 ? 0 : null;
  const within = (x: number, m: Measure) => x >= m.min && x <= m.max;
  const noChange = within(b.median, a) || within(a.median, b);
  const band: [number, number] | null =
    a.median > 0 && b.min > 0 && b.max > 0
      ? [Math.min(a.min / a.median - 1, b.median / b.max - 1), Math.max(a.max / a.median - 1, b.median / b.min - 1)]
      : null;
  const up = b.median > a.median;
  const verdict: Verdict = noChange ? 'no change' : up === (better === 'higher') ? 'better' : 'worse';
  return { change, band, verdict };
}

export function compareRuns(a: RunFile, b: RunFile): CompareRow[] {
  const fa = new Map(figuresOf(a).map((f) => [f.key, f]));
  const fb = new Map(figuresOf(b).map((f) => [f.key, f]));
  const keys = [...fa.keys(), ...[...fb.keys()].filter((k) => !fa.has(k))];
  return keys.map((key) => {
    const x = fa.get(key);
    const y = fb.get(key);
    const base = (x ?? y)!;
    const row = { key, label: base.label, unit: base.unit, better: base.better, a: x?.value ?? null, b: y?.value ?? null };
    if (!x) return { ...row, change: null, band: null, verdict: 'only in B' as const };
    if (!y) return { ...row, change: null, band: null, verdict: 'only in A' as const };
    if (!row.a || !row.b) return { ...row, change: null, band: null, verdict: 'not measured' as const };
    return { ...row, ...compareMeasures(row.a, row.b, base.better) };
  });
}

const cellOf = (m: Measure | null) => (m ? (m.n > 1 ? `${formatNumber(m.median)} [${formatSpread(m)}]` : formatNumber(m.median)) : '–');
const bandOf = (r: CompareRow) => {
  if (!r.band) return '–';
  // One round on each side: no spread to judge noise by, only the two values.
  if ((r.a?.n ?? 0) <= 1 && (r.b?.n ?? 0) <= 1) return 'none (1 round)';
  return `${formatPercent(r.band[0])}…${formatPercent(r.band[1])}`;
};

export function compareSummary(rows: readonly CompareRow[]): string {
  const count = (v: Verdict) => rows.filter((r) => r.verdict === v).length;
  const parts = [`${count('better')} better`, `${count('worse')} worse`, `${count('no change')} no change`];
  for (const v of ['only in A', 'only in B', 'not measured'] as const) if (count(v)) parts.push(`${count(v)} ${v}`);
  return `${parts.join(', ')} (of ${rows.length} figures)`;
}

function runLine(name: string, run: RunFile): string {
  const m = run.machine;
  return `${name}: ${run.at}${run.command ? ` (${run.command})` : ''}${m ? ` on ${m.cpuModel}, ${m.cores} cores, ${m.memoryGb} GB, Bun ${m.bun}` : ''}`;
}

/** What makes two headline runs unlike (their sizes, their servers), one line each; none when alike. */
export function differences(a: RunFile, b: RunFile): string[] {
  const ha = a.reports.find((r) => r.headline)?.headline;
  const hb = b.reports.find((r) => r.headline)?.headline;
  if (!ha || !hb) return [];
  const out: string[] = [];
  const n = (x: number) => x.toLocaleString('en-US');
  if (ha.options.events !== hb.options.events) out.push(`the runs differ in size: A ${n(ha.options.events)} events, B ${n(hb.options.events)}: the events list, exports and disk are not like for like`);
  if (ha.options.rounds !== hb.options.rounds || ha.options.seconds !== hb.options.seconds) {
    out.push(`the runs differ in rounds: A ${ha.options.rounds} of ${ha.options.seconds} s, B ${hb.options.rounds} of ${hb.options.seconds} s`);
  }
  if (ha.server.durability !== hb.server.durability) out.push(`the servers differ in durability: A ${ha.server.durability}, B ${hb.server.durability}`);
  for (const [name, h] of [['A', ha], ['B', hb]] as const) if (h.busy.busy) out.push(`${name} ran on a busy machine (other processes: ${h.busy.averageOtherCores} of ${h.busy.cores} cores on average)`);
  return out;
}

/** The comparison as the terminal shows it: the runs, the table, the summary. */
export function compareText(rows: readonly CompareRow[], runs: { a: RunFile; b: RunFile; aName: string; bName: string }): string {
  const table = textTable(
    ['Figure', 'unit', 'A [spread]', 'B [spread]', 'change', 'noise band', 'verdict'],
    rows.map((r) => [r.label, r.unit, cellOf(r.a), cellOf(r.b), formatPercent(r.change), bandOf(r), r.verdict]),
  );
  const notes = differences(runs.a, runs.b).map((d) => `note: ${d}`);
  return [runLine(`A ${runs.aName}`, runs.a), runLine(`B ${runs.bName}`, runs.b), ...notes, '', table, '', compareSummary(rows)].join('\n');
}

export function renderCompareHtml(rows: readonly CompareRow[], runs: { a: RunFile; b: RunFile; aName: string; bName: string }): string {
  const h = escapeXml;
  const chart = changeBars(
    rows.filter((r) => r.change !== null).map((r) => ({ label: r.label, change: r.change, band: r.band, verdict: r.verdict })),
    { title: 'Change of every figure from A to B, noise band shaded' },
  );
  const body = [
    '<h1>hogbase benchmark comparison</h1>',
    `<ul><li>${h(runLine(`A ${runs.aName}`, runs.a))}</li><li>${h(runLine(`B ${runs.bName}`, runs.b))}</li></ul>`,
    ...differences(runs.a, runs.b).map((d) => `<p class="warning">${h(d)}</p>`),
    `<p><b>${h(compareSummary(rows))}</b>. A change within the spread of either run (the shaded band) is reported as no change.</p>`,
    '<h2>Changes</h2>',
    chart,
    '<h2>Every figure</h2>',
    '<table class="compare"><thead><tr><th>Figure</th><th>unit</th><th class="num">A [spread]</th><th class="num">B [spread]</th><th class="num">change</th><th class="num">noise band</th><th>verdict</th></tr></thead><tbody>',
    ...rows.map(
      (r) =>
        `<tr class="${r.verdict.replace(/ /g, '-')}"><td>${h(r.label)}</td><td>${h(r.unit)}</td><td class="num">${h(cellOf(r.a))}</td><td class="num">${h(cellOf(r.b))}</td><td class="num">${h(formatPercent(r.change))}</td><td class="num">${h(bandOf(r))}</td><td>${h(r.verdict)}</td></tr>`,
    ),
    '</tbody></table>',
  ].join('\n');
  return page(`hogbase benchmark comparison: ${runs.aName} vs ${runs.bName}`, body);
}
