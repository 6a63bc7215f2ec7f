import type { Measure } from './types';

/**
 * Medians and spread of a figure's rounds. The spread is min–max: with the handful of rounds a
 * bench affords, an interquartile range is no narrower in practice and harder to read.
 */

/** The rounds' finite samples summarized, or null when none is finite (nothing was measured). */
export function measureOf(samples: readonly (number | null | undefined)[]): Measure | null {
  const xs = samples.filter((x): x is number => typeof x === 'number' && Number.isFinite(x));
  if (!xs.length) return null;
  const sorted = [...xs].sort((a, b) => a - b);
  return { median: medianOfSorted(sorted), min: sorted[0], max: sorted[sorted.length - 1], n: xs.length, samples: xs };
}

function medianOfSorted(sorted: readonly number[]): number {
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The p-quantile (0..1) by the nearest rank, as a latency percentile is read. */
export function quantile(samples: readonly number[], p: number): number | null {
  const s = samples.filter(Number.isFinite).sort((a, b) => a - b);
  if (!s.length) return null;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(s.length * p) - 1))];
}

/** A number as a reader wants it: thousands separated, 3 significant figures under 100. */
export function formatNumber(x: number | null | undefined): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '–';
  const abs = Math.abs(x);
  if (abs >= 100) return Math.round(x).toLocaleString('en-US');
  if (abs >= 10) return x.toFixed(1);
  if (abs >= 1) return x.toFixed(2);
  if (abs === 0) return '0';
  return x.toPrecision(2);
}

/** "1,234–1,456", or the one value when every round gave it. */
export function formatSpread(m: Measure | null | undefined): string {
  if (!m) return '–';
  return m.min === m.max ? formatNumber(m.min) : `${formatNumber(m.min)}–${formatNumber(m.max)}`;
}

/** A signed percentage: "+12.3%", "-4.0%", "0.0%". */
export function formatPercent(fraction: number | null): string {
  if (fraction === null || !Number.isFinite(fraction)) return '–';
  const pct = fraction * 100;
  const text = Math.abs(pct) >= 100 ? Math.round(pct).toString() : pct.toFixed(1);
  return `${pct > 0 ? '+' : ''}${text === '-0.0' ? '0.0' : text}%`;
}

/** Plain-text table with a header rule, columns padded (numbers already formatted). */
export function textTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => (c ?? '').padEnd(widths[i])).join(' | ').trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('-|-'), ...rows.map(line)].join('\n');
}
