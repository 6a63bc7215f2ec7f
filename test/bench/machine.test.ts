import { expect, test } from 'bun:test';
import { busyReport, otherCores, parsePidStat, parseProcStat, type CpuReading } from '../../bench/_machine';
import type { TimelineSample } from '../../bench/types';

test('parseProcStat: busy is user, nice, system, irq, softirq and steal; total adds idle and iowait', () => {
  const text = 'cpu  100 5 50 800 20 0 10 15 0 0\ncpu0 50 2 25 400 10 0 5 7 0 0\ncpu1 50 3 25 400 10 0 5 8 0 0\nintr 1 2 3\n';
  expect(parseProcStat(text)).toEqual({ busy: 180, total: 1000, cores: 2 });
  expect(parseProcStat('nothing here')).toBeNull();
});

test('parsePidStat reads utime + stime after the command name, whatever it holds', () => {
  const stat = '4242 (bun (worker) x) S 1 4242 4242 0 -1 4194304 1000 0 0 0 70 30 0 0 20 0 12 0 500 1000000 5000 18446744073709551615';
  expect(parsePidStat(stat)).toBe(100);
});

const reading = (busy: number, total: number, ours: Array<[number, number]>): CpuReading => ({ busy, total, cores: 2, ours: new Map(ours) });

test('otherCores: the machine\'s busy ticks minus ours, in cores', () => {
  // 200 ticks of machine time (1 s of 2 cores): 150 busy, of which 100 ours → 50 ticks others = 0.5 core.
  expect(otherCores(reading(1000, 5000, [[1, 300], [2, 100]]), reading(1150, 5200, [[1, 370], [2, 130]]))).toBe(0.5);
  // A process of ours that started meanwhile counts whole; one that exited counts as other (never below zero).
  expect(otherCores(reading(1000, 5000, [[1, 300]]), reading(1150, 5200, [[1, 350], [3, 100]]))).toBe(0);
  expect(otherCores(reading(1000, 5000, [[1, 300], [2, 100]]), reading(1150, 5200, [[1, 350]]))).toBe(1);
  expect(otherCores(reading(1000, 5000, []), reading(1000, 5000, []))).toBeNull();
});

const sample = (t: number, phase: string, otherCores: number | null): TimelineSample => ({ t, phase, rssMb: 100, otherCores });

test('busyReport: quiet machine, no warning', () => {
  expect(busyReport([sample(0, 'a', 0.1), sample(1, 'a', 0.2), sample(2, 'b', null), sample(3, 'b', 0)], 2)).toEqual({
    cores: 2,
    averageOtherCores: 0.1,
    peakOtherCores: 0.2,
    byPhase: { a: 0.15, b: 0 },
    busy: false,
    warning: null,
  });
});

test('busyReport: past a tenth of the machine on average, a warning naming the busiest phase', () => {
  expect(busyReport([sample(0, 'capture single', 1.5), sample(1, 'capture single', 0.9), sample(2, 'decide', 0.3)], 2)).toEqual({
    cores: 2,
    averageOtherCores: 0.9,
    peakOtherCores: 1.5,
    byPhase: { 'capture single': 1.2, decide: 0.3 },
    busy: true,
    warning:
      'The machine was busy: other processes used 0.9 of 2 cores on average (peak 1.5; most during capture single: 1.2). ' +
      'Every figure is lower and noisier than on an idle machine; compare ratios to the baselines of this run, and rerun when the machine is idle.',
  });
  expect(busyReport([], 2)).toEqual({ cores: 2, averageOtherCores: null, peakOtherCores: null, byPhase: {}, busy: false, warning: null });
});

test('busyReport leaves out the phases it is told measure nothing', () => {
  const report = busyReport([sample(0, 'starting servers', 1.8), sample(1, 'decide', 0.1)], 2, ['starting servers']);
  expect([report.averageOtherCores, report.byPhase, report.busy]).toEqual([0.1, { decide: 0.1 }, false]);
});
