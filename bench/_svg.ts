import { formatNumber, formatPercent } from './_stats';

/**
 * Inline SVG charts for the HTML reports: no library, no script, nothing fetched. Each function
 * returns one `<svg>` element sized by its viewBox, so it scales with the page.
 */

export const PALETTE = ['#94a3b8', '#64748b', '#2563eb', '#16a34a', '#d97706', '#dc2626', '#7c3aed'];

export const escapeXml = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

const text = (x: number, y: number, s: string, attrs = '') => `<text x="${r(x)}" y="${r(y)}"${attrs ? ` ${attrs}` : ''}>${escapeXml(s)}</text>`;
const r = (x: number) => Math.round(x * 10) / 10;

/** Average advance of a 12 px system-ui character: enough to keep a label inside its column. */
const CHAR_PX = 6.6;

/**
 * A label that fits `px`: parenthesized details before a colon go first ("Single-event capture
 * (POST /capture/, 64 connections): p99" → "Single-event capture: p99"), then the start is cut,
 * since the end names the figure. The whole label stays in the element's tooltip.
 */
export function fitLabel(label: string, px: number): string {
  const max = Math.max(4, Math.floor(px / CHAR_PX));
  if (label.length <= max) return label;
  const short = label.replace(/ \([^()]*\)(?=:)/g, '');
  return short.length <= max ? short : `…${short.slice(short.length - max + 1)}`;
}

export interface BarGroup {
  title: string;
  unit: string;
  bars: Array<{ label: string; value: number | null; color?: string }>;
}

/**
 * Small multiples of horizontal bars: one block per group, each on its own scale (so events/s
 * and req/s never share an axis), every bar labelled with its value.
 */
export function barGroups(groups: readonly BarGroup[], options: { title: string; width?: number } = { title: '' }): string {
  const width = options.width ?? 760;
  const labelW = 230;
  const valueW = 130;
  const barH = 16;
  const gap = 6;
  const plotW = width - labelW - valueW;
  const parts: string[] = [];
  let y = 8;
  for (const g of groups) {
    y += 16;
    parts.push(text(0, y, `${g.title} (${g.unit})`, 'class="group-title"'));
    y += 8;
    const max = Math.max(0, ...g.bars.map((b) => b.value ?? 0));
    g.bars.forEach((b, i) => {
      const w = max > 0 && b.value !== null ? Math.max(1, (b.value / max) * plotW) : 0;
      const color = b.color ?? PALETTE[i % PALETTE.length];
      parts.push(text(labelW - 8, y + barH - 4, fitLabel(b.label, labelW - 8), 'text-anchor="end"'));
      parts.push(`<rect class="bar" x="${labelW}" y="${r(y)}" width="${r(w)}" height="${barH}" fill="${color}"><title>${escapeXml(`${b.label}: ${formatNumber(b.value)} ${g.unit}`)}</title></rect>`);
      parts.push(text(labelW + w + 6, y + barH - 4, b.value === null ? 'not measured' : formatNumber(b.value)));
      y += barH + gap;
    });
  }
  return svg(width, y + 8, options.title, parts);
}

export interface LineSeries {
  label: string;
  color: string;
  points: Array<[number, number | null]>;
}

/** A time series chart: lines (gaps where a value is null), phases shaded behind them and named. */
export function lineChart(options: {
  title: string;
  series: readonly LineSeries[];
  phases?: ReadonlyArray<{ from: number; to: number; label: string }>;
  xUnit: string;
  yUnit: string;
  width?: number;
  height?: number;
}): string {
  const width = options.width ?? 760;
  const height = options.height ?? 260;
  const left = 56;
  const right = 12;
  const top = 22;
  const bottom = 34;
  const all = options.series.flatMap((s) => s.points);
  const xs = all.map((p) => p[0]);
  const ys = all.map((p) => p[1]).filter((v): v is number => v !== null);
  const x0 = xs.length ? Math.min(...xs) : 0;
  const x1 = Math.max(x0 + 1, ...xs);
  const y1 = niceCeiling(Math.max(0, ...ys));
  const sx = (x: number) => left + ((x - x0) / (x1 - x0)) * (width - left - right);
  const sy = (y: number) => top + (1 - y / y1) * (height - top - bottom);
  const parts: string[] = [];
  (options.phases ?? []).forEach((p, i) => {
    const a = sx(Math.max(x0, p.from));
    const b = sx(Math.min(x1, p.to));
    if (b <= a) return;
    parts.push(`<rect class="phase" x="${r(a)}" y="${top}" width="${r(b - a)}" height="${height - top - bottom}" fill="${i % 2 ? '#f1f5f9' : '#e2e8f0'}"><title>${escapeXml(p.label)}</title></rect>`);
    // Labels are cut to their band (about 6.5 px a character at 11 px), never over the next one.
    const fits = Math.floor((b - a - 6) / 6.5);
    if (fits >= 4) parts.push(text(a + 3, top + 12, p.label.length > fits ? `${p.label.slice(0, fits - 1)}…` : p.label, 'class="phase-label"'));
  });
  for (let k = 0; k <= 4; k++) {
    const v = (y1 * k) / 4;
    parts.push(`<line x1="${left}" x2="${width - right}" y1="${r(sy(v))}" y2="${r(sy(v))}" stroke="#cbd5e1" stroke-width="0.5"/>`);
    parts.push(text(left - 6, sy(v) + 4, formatNumber(v), 'text-anchor="end"'));
  }
  parts.push(text(left, height - 8, `${formatNumber(x0)} ${options.xUnit}`));
  parts.push(text(width - right, height - 8, `${formatNumber(x1)} ${options.xUnit}`, 'text-anchor="end"'));
  parts.push(text(4, 12, options.yUnit));
  options.series.forEach((s, i) => {
    const segments: string[][] = [[]];
    for (const [x, y] of s.points) {
      if (y === null) segments.push([]);
      else segments[segments.length - 1].push(`${r(sx(x))},${r(sy(y))}`);
    }
    for (const seg of segments.filter((g) => g.length)) {
      parts.push(`<polyline class="series" fill="none" stroke="${s.color}" stroke-width="1.8" points="${seg.join(' ')}"/>`);
    }
    // The legend sits under the plot, between the axis ends, clear of the phase labels.
    const x = width / 2 - 70 + i * 150;
    parts.push(`<rect x="${r(x)}" y="${height - 17}" width="10" height="10" fill="${s.color}"/>`);
    parts.push(text(x + 14, height - 8, s.label));
  });
  return svg(width, height, options.title, parts);
}

export interface ChangeBar {
  label: string;
  /** Relative change, B over A minus one. */
  change: number | null;
  /** The noise band as relative changes: within it a change is no change. */
  band: [number, number] | null;
  verdict: string;
}

/** Changes around a zero line, each with its noise band shaded: bars outside the band are real. */
export function changeBars(rows: readonly ChangeBar[], options: { title: string; width?: number }): string {
  const width = options.width ?? 760;
  const labelW = 340;
  const valueW = 140;
  const barH = 14;
  const gap = 6;
  const plotW = width - labelW - valueW;
  const limit = Math.min(2, Math.max(0.05, ...rows.flatMap((x) => [Math.abs(x.change ?? 0), Math.abs(x.band?.[0] ?? 0), Math.abs(x.band?.[1] ?? 0)])));
  const sx = (c: number) => labelW + plotW / 2 + (Math.max(-limit, Math.min(limit, c)) / limit) * (plotW / 2);
  const parts: string[] = [];
  let y = 10;
  parts.push(text(sx(-limit), y + 2, formatPercent(-limit), 'text-anchor="start"'), text(sx(limit), y + 2, formatPercent(limit), 'text-anchor="end"'));
  y += 10;
  const top = y;
  for (const row of rows) {
    parts.push(`<g><title>${escapeXml(row.label)}</title>${text(labelW - 8, y + barH - 3, fitLabel(row.label, labelW - 8), 'text-anchor="end"')}</g>`);
    if (row.band && row.band[1] > row.band[0]) parts.push(`<rect class="band" x="${r(sx(row.band[0]))}" y="${r(y - 2)}" width="${r(sx(row.band[1]) - sx(row.band[0]))}" height="${barH + 4}" fill="#e2e8f0"/>`);
    if (row.change !== null) {
      const a = sx(Math.min(0, row.change));
      const b = sx(Math.max(0, row.change));
      const color = row.verdict === 'better' ? '#16a34a' : row.verdict === 'worse' ? '#dc2626' : '#94a3b8';
      parts.push(`<rect class="bar" x="${r(a)}" y="${r(y)}" width="${r(Math.max(1, b - a))}" height="${barH}" fill="${color}"><title>${escapeXml(`${row.label}: ${formatPercent(row.change)} (${row.verdict})`)}</title></rect>`);
    }
    parts.push(text(labelW + plotW + 6, y + barH - 3, `${formatPercent(row.change)} ${row.verdict}`));
    y += barH + gap;
  }
  parts.push(`<line x1="${r(sx(0))}" x2="${r(sx(0))}" y1="${top - 4}" y2="${y}" stroke="#0f172a" stroke-width="1"/>`);
  return svg(width, y + 6, options.title, parts);
}

/** The next round number at or above x (1, 2, 2.5, 5 × a power of ten), for an axis. */
export function niceCeiling(x: number): number {
  if (!(x > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(x));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= x) return m * p;
  return 10 * p;
}

function svg(width: number, height: number, title: string, parts: readonly string[]): string {
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 ${width} ${r(height)}" width="100%" role="img" aria-label="${escapeXml(title)}">` +
    `<title>${escapeXml(title)}</title>${parts.join('')}</svg>`
  );
}
