import type { Histogram } from './histogram';

/**
 * The Prometheus text exposition format (version 0.0.4), written out from plain values. Kept
 * here rather than taken from prom-client: the figures already live in the stores' counters and
 * are read at scrape time, so a registry of metric objects updated on every event would be a
 * second copy to keep in step; what is left is escaping and line layout, a few dozen lines.
 */
export type Labels = Readonly<Record<string, string>>;

export type MetricFamily =
  | { name: string; help: string; type: 'counter' | 'gauge'; samples: ReadonlyArray<{ labels?: Labels; value: number }> }
  | { name: string; help: string; type: 'histogram'; samples: ReadonlyArray<{ labels?: Labels; value: Histogram }> };

export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export function renderExposition(families: readonly MetricFamily[]): string {
  const out: string[] = [];
  for (const f of families) {
    out.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`);
    if (f.type === 'histogram') {
      for (const { labels, value } of f.samples) {
        let cumulative = 0;
        value.bounds.forEach((bound, i) => {
          cumulative += value.counts[i];
          out.push(`${f.name}_bucket${labelText({ ...labels, le: formatValue(bound) })} ${cumulative}`);
        });
        out.push(`${f.name}_bucket${labelText({ ...labels, le: '+Inf' })} ${value.count}`);
        out.push(`${f.name}_sum${labelText(labels)} ${formatValue(value.sum)}`, `${f.name}_count${labelText(labels)} ${value.count}`);
      }
    } else for (const { labels, value } of f.samples) out.push(`${f.name}${labelText(labels)} ${formatValue(value)}`);
  }
  return out.join('\n') + '\n';
}

function labelText(labels: Labels | undefined): string {
  if (!labels) return '';
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const escapeHelp = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}
