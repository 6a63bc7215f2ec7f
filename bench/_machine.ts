import { readFileSync } from 'node:fs';
import { availableParallelism, release, totalmem } from 'node:os';
import { DuckDBInstance } from '@duckdb/node-api';
import type { BusyReport, MachineInfo, TimelineSample } from './types';

/**
 * What a run was measured on, and how busy the machine was with other work meanwhile: the CPU
 * every process used (/proc/stat) minus what the bench and its servers used (/proc/<pid>/stat).
 */

const readText = (path: string): string | null => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
};

export async function machineInfo(): Promise<MachineInfo> {
  const cpuinfo = readText('/proc/cpuinfo') ?? '';
  const osRelease = readText('/etc/os-release') ?? '';
  let duckdb = 'unknown';
  try {
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    const rows = (await connection.runAndReadAll('SELECT version() AS v')).getRowObjectsJS();
    duckdb = String(rows[0]?.v ?? 'unknown');
    connection.closeSync();
    instance.closeSync();
  } catch {
    // the report says unknown
  }
  return {
    cpuModel: /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? 'unknown',
    cores: availableParallelism(),
    memoryGb: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    os: /^PRETTY_NAME="?([^"\n]+)"?$/m.exec(osRelease)?.[1] ?? process.platform,
    kernel: `${process.platform} ${release()}`,
    bun: Bun.version,
    duckdb,
  };
}

/** The machine's CPU counters in clock ticks: busy (user, nice, system, irq, softirq, steal) and total. */
export function parseProcStat(text: string): { busy: number; total: number; cores: number } | null {
  const line = /^cpu\s+(.+)$/m.exec(text);
  if (!line) return null;
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line[1].trim().split(/\s+/).map(Number);
  const busy = user + nice + system + irq + softirq + (steal || 0);
  return { busy, total: busy + idle + (iowait || 0), cores: (text.match(/^cpu\d+\s/gm) ?? []).length || 1 };
}

/** user + system clock ticks of one process (all its threads) from /proc/<pid>/stat. */
export function parsePidStat(text: string): number | null {
  // The command name (field 2) may hold spaces and parentheses: fields are counted after its ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return Number.isFinite(ticks) ? ticks : null;
}

export interface CpuReading {
  busy: number;
  total: number;
  cores: number;
  /** Ticks used so far by each process of ours that exists. */
  ours: ReadonlyMap<number, number>;
}

/**
 * Other processes' CPU between two readings, in cores: the machine's busy ticks minus what our
 * processes used meanwhile, over the total ticks (busy + idle) spread across its cores. A process
 * of ours counts for what it used between the readings (all of it when it started meanwhile);
 * one that exited took its last ticks with it, which then count as other. Never below zero.
 */
export function otherCores(before: CpuReading, after: CpuReading): number | null {
  const total = after.total - before.total;
  if (total <= 0) return null;
  let ours = 0;
  for (const [pid, ticks] of after.ours) ours += ticks - (before.ours.get(pid) ?? 0);
  const other = after.busy - before.busy - ours;
  return Math.max(0, (other / total) * after.cores);
}

/** Reads the machine's and our processes' counters now (null where /proc is not there). */
export function cpuReading(pids: Iterable<number>): CpuReading | null {
  const text = readText('/proc/stat');
  const stat = text ? parseProcStat(text) : null;
  if (!stat) return null;
  const ours = new Map<number, number>();
  for (const pid of new Set([process.pid, ...pids])) {
    const pidText = readText(`/proc/${pid}/stat`);
    const ticks = pidText ? parsePidStat(pidText) : null;
    if (ticks !== null) ours.set(pid, ticks);
  }
  return { ...stat, ours };
}

/** Share of the machine's CPU other processes may use on average before a run is called busy. */
export const BUSY_SHARE = 0.1;

/**
 * The verdict over a run's timeline: averages overall and per phase, a warning past `BUSY_SHARE`.
 * `ignore`: phases that measure nothing (starting servers, whose first ticks may count as other's).
 */
export function busyReport(timeline: readonly TimelineSample[], cores: number, ignore: readonly string[] = []): BusyReport {
  const xs = timeline.filter((s) => s.otherCores !== null && !ignore.includes(s.phase));
  const avg = (ss: readonly TimelineSample[]) => ss.reduce((n, s) => n + (s.otherCores ?? 0), 0) / ss.length;
  const byPhase: Record<string, number> = {};
  for (const phase of new Set(xs.map((s) => s.phase))) byPhase[phase] = round2(avg(xs.filter((s) => s.phase === phase)));
  if (!xs.length) return { cores, averageOtherCores: null, peakOtherCores: null, byPhase, busy: false, warning: null };
  const average = round2(avg(xs));
  const peak = round2(Math.max(...xs.map((s) => s.otherCores ?? 0)));
  const busy = average > BUSY_SHARE * cores;
  const busiest = Object.entries(byPhase).sort((a, b) => b[1] - a[1])[0];
  const warning = busy
    ? `The machine was busy: other processes used ${average} of ${cores} cores on average (peak ${peak}; most during ${busiest[0]}: ${busiest[1]}). ` +
      'Every figure is lower and noisier than on an idle machine; compare ratios to the baselines of this run, and rerun when the machine is idle.'
    : null;
  return { cores, averageOtherCores: average, peakOtherCores: peak, byPhase, busy, warning };
}

const round2 = (x: number) => Math.round(x * 100) / 100;
