import { newHistogram, type Histogram } from './core/metrics/histogram';

/**
 * What the HTTP side counts, for `GET /metrics`. The stores keep their own figures (the event
 * store's `stats()`), read at scrape time rather than copied here as they change.
 */
export interface AppMetrics {
  /** Requests answered, by method, route (the matched pattern, never the raw path) and status. */
  readonly requests: Map<string, { method: string; route: string; status: number; count: number }>;
  /** Events in capture requests answered 200 (as received: the pipeline may drop some behind the 200). */
  eventsAcknowledged: number;
  /** Seconds each events-API statement took, to its last row or its error. */
  readonly querySeconds: Histogram;
  /** Collections of the main thread's heap started by the memory guard (memory-guard.ts). */
  forcedCollections: number;
  /** The capture bodies in hand and waiting (modules/capture/body-budget.ts), once the capture module is made. */
  captureBodies: CaptureBodiesFigures | null;
}

/** What the capture module's body budget shows: bytes in hand, requests waiting, requests refused since the start. */
export interface CaptureBodiesFigures {
  readonly inHand: number;
  readonly queued: number;
  readonly refused: number;
}

export function createAppMetrics(): AppMetrics {
  return { requests: new Map(), eventsAcknowledged: 0, querySeconds: newHistogram(), forcedCollections: 0, captureBodies: null };
}

export function countRequest(metrics: AppMetrics, method: string, route: string, status: number): void {
  const key = `${method} ${status} ${route}`;
  const entry = metrics.requests.get(key);
  if (entry) entry.count++;
  else metrics.requests.set(key, { method, route, status, count: 1 });
}
