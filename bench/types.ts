/**
 * Every benchmark is a module `bench/<name>.ts` whose default export is a `Benchmark`.
 * `npm run bench` runs them all; `npm run bench -- <name>` runs one. Figures are medians of
 * repeated runs, next to a baseline measured in the same run, so ratios (not absolute numbers,
 * which vary up to 2.4x on this noisy 2-core machine) are what to compare.
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
}

export interface BenchContext {
  /** A scratch directory removed after the benchmark. */
  tmpDir: string;
  /** Set by `--quick`: smaller data and shorter runs, for a smoke run of the bench code. */
  quick: boolean;
  log(message: string): void;
}

export type Benchmark = (ctx: BenchContext) => Promise<BenchReport>;
