import { HEADLINE_COLUMNS, figureCells, phasesOf } from './_headline-table';
import { barGroups, escapeXml, lineChart, PALETTE } from './_svg';
import type { BenchReport, HeadlineData, RunFile } from './types';

/**
 * The self-contained HTML report written beside every run's JSON: the machine, the headline
 * table, charts as inline SVG (throughput next to the baselines, latency percentiles, the
 * server's memory and other processes' CPU over the run), then every other bench's table.
 * No script and nothing fetched: it opens from a file, offline, years later.
 */

export const REPORT_STYLE = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#0f172a;margin:0 auto;max-width:1040px;padding:24px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #e2e8f0;padding-bottom:4px}
table{border-collapse:collapse;width:100%;margin:8px 0}th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #e2e8f0;vertical-align:top}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}tr.section th{background:#f1f5f9;font-weight:600}
.warning{background:#fef3c7;border:1px solid #f59e0b;padding:8px 12px;border-radius:6px}.muted{color:#64748b}
svg.chart{max-width:100%;height:auto;font-size:12px;fill:#0f172a}svg .group-title{font-weight:600}svg .phase-label{fill:#475569;font-size:11px}
dl.machine{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px}dl.machine dt{color:#64748b}dl.machine dd{margin:0}
code{background:#f1f5f9;padding:1px 4px;border-radius:4px}`;

const h = escapeXml;

export function page(title: string, body: string): string {
  return `<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<meta name="viewport" content="width=device-width, initial-scale=1">\n<title>${h(title)}</title>\n<style>${REPORT_STYLE}</style>\n</head>\n<body>\n${body}\n</body>\n</html>\n`;
}

export function renderReport(run: RunFile): string {
  const headline = run.reports.find((r) => r.headline)?.headline ?? null;
  const parts: string[] = [`<h1>hogbase benchmark</h1>`, `<p class="muted">${h(run.at)}${run.command ? ` · <code>${h(run.command)}</code>` : ''}</p>`];
  if (headline?.busy.warning) parts.push(`<p class="warning" role="alert">${h(headline.busy.warning)}</p>`);
  parts.push(machineSection(run, headline));
  if (headline) parts.push(headlineSection(headline));
  for (const report of run.reports) {
    if (report.headline) parts.push(notesSection(report));
    else parts.push(reportSection(report));
  }
  return page(`hogbase benchmark ${run.at}`, parts.join('\n'));
}

function machineSection(run: RunFile, headline: HeadlineData | null): string {
  const m = run.machine;
  const items: Array<[string, string]> = [
    ['CPU', m ? `${m.cpuModel}, ${m.cores} cores` : 'not recorded'],
    ['Memory', m ? `${m.memoryGb} GB` : 'not recorded'],
    ['OS', m ? `${m.os} (${m.kernel})` : 'not recorded'],
    ['Bun', m?.bun ?? run.bun],
    ['DuckDB', m?.duckdb ?? 'not recorded'],
  ];
  if (headline) {
    items.push(['Durability', headline.server.durability]);
    items.push(['Server', headline.server.mode === 'spawned' ? `spawned by the bench on loopback${headline.server.version ? ` (hogbase ${headline.server.version})` : ''}` : `already running at ${headline.server.url}${headline.server.version ? ` (hogbase ${headline.server.version})` : ''}`]);
    const o = headline.options;
    items.push(['Size', `${o.events.toLocaleString('en-US')} generated events for the events list and exports; ${o.rounds} rounds of ${o.seconds} s per load case${o.quick ? ' (quick)' : ''}`]);
  }
  return `<h2>Machine</h2>\n<dl class="machine">${items.map(([k, v]) => `<dt>${h(k)}</dt><dd>${h(v)}</dd>`).join('')}</dl>`;
}

function headlineSection(d: HeadlineData): string {
  const rows: string[] = [];
  let section = '';
  for (const f of d.figures) {
    if (f.section !== section) {
      section = f.section;
      rows.push(`<tr class="section"><th colspan="${HEADLINE_COLUMNS.length - 1}">${h(section)}</th></tr>`);
    }
    const cells = figureCells(f).slice(1);
    rows.push(`<tr><td>${h(cells[0])}</td>${cells.slice(1).map((c) => `<td class="num">${h(c)}</td>`).join('')}</tr>`);
  }
  const head = HEADLINE_COLUMNS.slice(1).map((c, i) => `<th${i ? ' class="num"' : ''}>${h(c)}</th>`).join('');
  const colors = { 'bare Bun.serve': PALETTE[0], 'durable floor': PALETTE[1], 'hogbase acknowledged': PALETTE[2], 'hogbase queryable': PALETTE[3] } as Record<string, string>;
  const throughput = barGroups(
    d.throughput.map((g) => ({ title: g.case, unit: g.unit, bars: g.bars.map((b, i) => ({ ...b, color: colors[b.label] ?? PALETTE[(i + 2) % PALETTE.length] })) })),
    { title: 'Throughput next to the baselines of the same run' },
  );
  const latency = barGroups(
    d.latency.map((l) => ({ title: l.case, unit: 'ms', bars: [{ label: 'p50', value: l.p50, color: PALETTE[2] }, { label: 'p90', value: l.p90, color: PALETTE[4] }, { label: 'p99', value: l.p99, color: PALETTE[5] }] })),
    { title: 'Latency percentiles of hogbase (medians over rounds)' },
  );
  const phases = phasesOf(d.timeline);
  const rss = lineChart({
    title: "The server's resident memory over the run",
    series: [{ label: 'hogbase RSS', color: PALETTE[2], points: d.timeline.map((s) => [s.t, s.rssMb]) }],
    phases,
    xUnit: 's',
    yUnit: 'MB',
  });
  const cpu = lineChart({
    title: "Other processes' CPU over the run",
    series: [{ label: 'other processes', color: PALETTE[5], points: d.timeline.map((s) => [s.t, s.otherCores]) }],
    phases,
    xUnit: 's',
    yUnit: 'cores',
    height: 180,
  });
  const busy = d.busy.averageOtherCores === null ? 'not measured (no /proc)' : `${d.busy.averageOtherCores} of ${d.busy.cores} cores on average, peak ${d.busy.peakOtherCores}`;
  return [
    '<h2>Headline</h2>',
    `<table class="headline"><thead><tr>${head}</tr></thead><tbody>${rows.join('')}</tbody></table>`,
    '<p class="muted">Medians over rounds; spread is the lowest and highest round. <b>Acknowledged</b>: events answered 200 per second of load (in durable mode each 200 follows an fsync). <b>Queryable</b>: the same events over the load plus the wait until the events API counts every one of them. The <b>bare Bun.serve</b> only parses the body and answers; the <b>durable floor</b> adds a log append and a group-commit fdatasync before its 200: the honest ceiling of a server that answers only once events are on disk. Compare ratios within one run, not absolute figures across machines or busy runs.</p>',
    '<h2>Throughput</h2>',
    throughput,
    '<h2>Latency</h2>',
    latency,
    '<h2>Memory and machine load over the run</h2>',
    rss,
    `<p class="muted">Other processes' CPU: ${h(busy)} (the machine's busy time minus the bench's and its servers').</p>`,
    cpu,
  ].join('\n');
}

function notesSection(report: BenchReport): string {
  if (!report.notes?.length) return '';
  return `<h2>Notes</h2>\n<ul>${report.notes.map((n) => `<li>${h(n)}</li>`).join('')}</ul>`;
}

/** Another bench's rows as a plain table (their columns as they came). */
function reportSection(report: BenchReport): string {
  const columns = [...new Set(report.rows.flatMap((r) => Object.keys(r)))];
  const cell = (v: unknown) => (typeof v === 'number' ? `<td class="num">${h(Number.isInteger(v) ? v.toLocaleString('en-US') : v.toFixed(2))}</td>` : `<td>${h(String(v ?? ''))}</td>`);
  return [
    `<h2>${h(report.name)}</h2>`,
    `<table><thead><tr>${columns.map((c) => `<th>${h(c)}</th>`).join('')}</tr></thead><tbody>${report.rows.map((r) => `<tr>${columns.map((c) => cell(r[c])).join('')}</tr>`).join('')}</tbody></table>`,
    report.notes?.length ? `<ul>${report.notes.map((n) => `<li>${h(n)}</li>`).join('')}</ul>` : '',
  ].join('\n');
}
