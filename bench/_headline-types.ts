import type { Child } from './_ingest-procs';
import type { Sampler } from './_headline-sampler';
import type { ServerTarget } from './_target';
import type { BenchOptions } from './types';

/** What the headline's steps share: the server under test, its baselines, the sampler, the options. */
export interface HeadlineEnv {
  options: BenchOptions;
  quick: boolean;
  /** The bench started the server (a fresh DATA_DIR) rather than measuring a `--target`. */
  spawned: boolean;
  target: ServerTarget;
  /** The bare server and the durable floor (null for a target on another machine: they would be this machine's). */
  baselines: { bare: Child; floor: Child } | null;
  sampler: Sampler;
  /** Things that went wrong but did not stop the run (they become notes). */
  problems: string[];
  log(message: string): void;
}

/** One load round of one server. */
export interface LoadSample {
  rps: number;
  eps: number;
  p50: number;
  p90: number | null;
  p99: number;
  peakMb: number | null;
  /** The server's: from the end of the round until the events API counted every event. */
  queryableS: number | null;
  queryableEps: number | null;
  errors: number;
}

export type ServerSamples = Partial<Record<'bare' | 'floor' | 'real', LoadSample[]>>;

export interface ExportSample {
  seconds: number;
  rows: number;
  bytes: number;
  peakMb: number | null;
}

export interface DatasetSamples {
  events: number;
  loadSeconds: number;
  queryableS: number;
  loadPeakMb: number | null;
  /** Milliseconds of each timed request, by case name. */
  queries: Record<string, number[]>;
  exports: Record<'csv' | 'parquet', ExportSample[]>;
  /** DATA_DIR's allocated bytes once loaded (a spawned server only). */
  diskBytes: number | null;
  /** From /metrics: the Parquet files' bytes and rows. */
  parquetBytes: number | null;
  parquetRows: number | null;
}

export interface HeadlineSamples {
  single: ServerSamples | null;
  batch: ServerSamples | null;
  decide: ServerSamples | null;
  dataset: DatasetSamples | null;
}

/** The events-list requests of the headline, by name (query parameters; `{person}` is a generated distinct id). */
export const EVENTS_LIST_CASES: ReadonlyArray<{ key: string; name: string; query: Record<string, string> }> = [
  { key: 'latest', name: 'latest 100', query: { limit: '100' } },
  { key: 'event', name: 'by event (signed_up)', query: { limit: '100', event: 'signed_up' } },
  { key: 'person', name: "a person's events (distinct_id)", query: { limit: '100', distinct_id: '{person}' } },
  { key: 'property', name: 'property filter (plan = enterprise)', query: { limit: '100', properties: JSON.stringify([{ key: 'plan', value: 'enterprise', operator: 'exact', type: 'event' }]) } },
];
