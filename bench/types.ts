/**
 * Every benchmark is a module `bench/<name>.ts` whose default export is a `Benchmark`.
 * `npm run bench` runs the headline; `npm run bench -- <name>` runs one, `-- all` every one.
 * Figures are medians of repeated runs, next to a baseline measured in the same run, so ratios
 * (not absolute numbers, which vary up to 2.4x on this noisy 2-core machine) are what to compare.
 */
export interface BenchRow {
  /** What was measured, e.g. "append batch=100 durable". */
  case: string;
  [figure: string]: string | number | null;
}

export interface BenchReport {
  name: string;
  rows: BenchRow[];
  notes?: string[];
  /** The headline bench's figures with their spread, chart data and the machine's busyness. */
  headline?: HeadlineData;
}

/** Options of a run, from the command line (`bench/_args.ts`). */
export interface BenchOptions {
  /** Events generated and loaded for the events-list and export figures. */
  events: number;
  /** Rounds per measured case (medians and spread over them). */
  rounds: number;
  /** Length of one load round in seconds. */
  seconds: number;
  /** An already running server to measure instead of spawning one (`--target URL`). */
  target: string | null;
  /** `--allow-remote`: the target may be a host other than this machine's loopback. */
  allowRemote: boolean;
}

export interface BenchContext {
  /** A scratch directory removed after the benchmark. */
  tmpDir: string;
  /** Set by `--quick`: smaller data and shorter runs, for a smoke run of the bench code. */
  quick: boolean;
  /** Sizes and target from the command line (defaults already applied). */
  options: BenchOptions;
  log(message: string): void;
}

export type Benchmark = (ctx: BenchContext) => Promise<BenchReport>;

/** Which way is good for a figure: more events/s, fewer milliseconds. */
export type Better = 'higher' | 'lower';

/** A figure over its rounds: the median, and min/max as its spread (the noise band of compare). */
export interface Measure {
  median: number;
  min: number;
  max: number;
  /** Rounds measured. */
  n: number;
  samples: number[];
}

/** One line of the headline table. `key` is stable across versions: compare matches on it. */
export interface Figure {
  key: string;
  /** What is measured, e.g. "Single-event capture (POST /capture/, 64 connections)". */
  section: string;
  /** The figure within it, e.g. "acknowledged". */
  name: string;
  unit: string;
  better: Better;
  /** The server under test (hogbase). */
  value: Measure | null;
  /** The same figure of the bare `Bun.serve` and the durable floor, in the same run. */
  bare?: Measure | null;
  floor?: Measure | null;
}

/** One sample of the run's timeline: the server's resident memory and other processes' CPU. */
export interface TimelineSample {
  /** Seconds since the run started. */
  t: number;
  phase: string;
  rssMb: number | null;
  /** CPU of every process on the machine but the bench and its servers, in cores. */
  otherCores: number | null;
}

/** Other processes' CPU during the run: enough of it makes every figure noisier. */
export interface BusyReport {
  cores: number;
  averageOtherCores: number | null;
  peakOtherCores: number | null;
  byPhase: Record<string, number>;
  busy: boolean;
  warning: string | null;
}

export interface ThroughputBar {
  case: string;
  unit: string;
  bars: Array<{ label: string; value: number | null }>;
}

export interface LatencyBar {
  case: string;
  p50: number | null;
  p90: number | null;
  p99: number | null;
}

export interface HeadlineData {
  options: BenchOptions & { quick: boolean };
  server: { mode: 'spawned' | 'target'; url: string | null; durability: string; version: string | null };
  figures: Figure[];
  throughput: ThroughputBar[];
  latency: LatencyBar[];
  timeline: TimelineSample[];
  busy: BusyReport;
}

/** The machine a run was measured on (the load generator's; with a spawned server, the server's too). */
export interface MachineInfo {
  cpuModel: string;
  cores: number;
  memoryGb: number;
  os: string;
  kernel: string;
  bun: string;
  duckdb: string;
}

/** What `bench/run.ts` writes to `bench/results/bench-<time>.json` (and renders as HTML beside it). */
export interface RunFile {
  at: string;
  bun: string;
  command?: string;
  machine?: MachineInfo;
  reports: BenchReport[];
}
