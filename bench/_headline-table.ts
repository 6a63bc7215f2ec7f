import { formatNumber, formatSpread, textTable } from './_stats';
import type { Figure, HeadlineData, TimelineSample } from './types';

/**
 * The headline's table, as text (the terminal) and as cells (the HTML report): one row per
 * figure, hogbase's median and spread next to the bare server and the durable floor of the run.
 */

export const HEADLINE_COLUMNS = ['Measured', 'Figure', 'hogbase', 'spread (min–max)', 'bare Bun.serve', 'durable floor', 'hogbase / floor'] as const;

/** hogbase's median over the floor's (for lower-is-better figures too: a plain ratio). */
export function floorRatio(f: Figure): number | null {
  if (!f.value || !f.floor || !f.floor.median) return null;
  return f.value.median / f.floor.median;
}

export function figureCells(f: Figure): string[] {
  const ratio = floorRatio(f);
  const unit = (m: Figure['value']) => (m ? `${formatNumber(m.median)} ${f.unit}` : '–');
  return [
    f.section,
    f.name,
    unit(f.value),
    f.value ? `${formatSpread(f.value)} (${f.value.n} round${f.value.n === 1 ? '' : 's'})` : '–',
    f.bare === undefined ? '' : unit(f.bare),
    f.floor === undefined ? '' : unit(f.floor),
    ratio === null ? '' : `${ratio.toFixed(2)}×`,
  ];
}

export function headlineText(data: HeadlineData): string {
  const rows = data.figures.map(figureCells);
  // The section is printed once, on the first of its rows.
  rows.forEach((row, i) => {
    if (i > 0 && data.figures[i - 1].section === data.figures[i].section) row[0] = '';
  });
  const lines = [textTable([...HEADLINE_COLUMNS], rows)];
  if (data.busy.warning) lines.push(`WARNING: ${data.busy.warning}`);
  else if (data.busy.averageOtherCores !== null) lines.push(`other processes used ${data.busy.averageOtherCores} of ${data.busy.cores} cores on average during the run (peak ${data.busy.peakOtherCores})`);
  return lines.join('\n');
}

/** Contiguous runs of one phase in the timeline, for shading a chart. */
export function phasesOf(timeline: readonly TimelineSample[]): Array<{ from: number; to: number; label: string }> {
  const out: Array<{ from: number; to: number; label: string }> = [];
  for (const s of timeline) {
    const last = out[out.length - 1];
    if (last && last.label === s.phase) last.to = s.t;
    else {
      if (last) last.to = s.t;
      out.push({ from: s.t, to: s.t, label: s.phase });
    }
  }
  return out;
}
