import type { MetricFamily } from '../../core/metrics/exposition';
import type { DropReason } from '../../core/ingest/normalize-event';
import type { Deps } from '../../deps';

/** Every reason shown from the start (at 0), so a dashboard's series exist before the first drop. */
const DROP_REASONS: readonly (DropReason | 'duplicate')[] = ['missing_event_name', 'missing_distinct_id', 'invalid_properties', 'duplicate'];

const gauge = (name: string, help: string, value: number): MetricFamily => ({ name, help, type: 'gauge', samples: [{ value }] });
const counter = (name: string, help: string, value: number): MetricFamily => ({ name, help, type: 'counter', samples: [{ value }] });

/**
 * The figures of `GET /metrics`, read now from where they live: the HTTP counters, the event
 * store's stats, the store's memory and the process. Names follow Prometheus conventions (a
 * `hogbase_` prefix, base units in the name, `_total` for counters).
 */
export async function collectMetrics(deps: Deps): Promise<MetricFamily[]> {
  const stats = deps.storage.events.stats();
  const memory = await deps.storage.memoryUsage();
  const js = process.memoryUsage();
  const { metrics } = deps;
  const dropped = { ...stats.droppedEvents, duplicate: stats.duplicateRowsSkipped };
  const reasons = [...new Set([...DROP_REASONS, ...Object.keys(dropped)])];
  return [
    { name: 'hogbase_build_info', help: 'The running version (always 1).', type: 'gauge', samples: [{ labels: { version: deps.version }, value: 1 }] },
    {
      name: 'hogbase_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status.',
      type: 'counter',
      samples: [...metrics.requests.values()].map((r) => ({ labels: { method: r.method, route: r.route, status: String(r.status) }, value: r.count })),
    },
    counter('hogbase_ingest_events_acknowledged_total', 'Events in capture requests answered 200 (as received).', metrics.eventsAcknowledged),
    counter('hogbase_ingest_events_stored_total', 'Events stored (loaded, queryable).', stats.flushedRows),
    {
      name: 'hogbase_ingest_events_dropped_total',
      help: 'Acknowledged events not stored, by reason: no event name, no distinct id, properties not an object, or a repeat of a stored uuid.',
      type: 'counter',
      samples: reasons.map((reason) => ({ labels: { reason }, value: dropped[reason as keyof typeof dropped] ?? 0 })),
    },
    counter('hogbase_ingest_requests_refused_total', 'Capture requests answered 503 because the store could not take them (backpressure, disk, log write).', stats.rejectedAppends),
    gauge('hogbase_capture_body_bytes_in_hand', 'Bytes of capture bodies being read or processed now, a compressed one counted as decoded (capped: past the cap a request waits).', metrics.captureBodies?.inHand ?? 0),
    gauge('hogbase_capture_bodies_waiting', 'Capture requests waiting for room to read their body.', metrics.captureBodies?.queued ?? 0),
    counter('hogbase_capture_bodies_refused_total', 'Capture requests answered 503 because no room to read their body came within the wait.', metrics.captureBodies?.refused ?? 0),
    gauge('hogbase_ingest_accepting', 'Whether capture requests are taken now (0 during backpressure or shutdown).', stats.backpressure === null ? 1 : 0),
    gauge('hogbase_log_backlog_bytes', 'Logged bytes not yet stored, and bytes waiting for the log.', stats.pendingBytes),
    gauge('hogbase_log_backlog_events', 'Acknowledged events not yet stored.', stats.bufferedRows),
    gauge('hogbase_log_backlog_oldest_age_seconds', 'How long the oldest acknowledged, unstored event has waited (0: none).', stats.oldestPendingMs / 1000),
    gauge('hogbase_hot_rows', 'Stored events in the hot table, not yet compacted to Parquet.', stats.hotRows),
    gauge('hogbase_parquet_files', 'Parquet files of stored events.', stats.parquetFiles),
    gauge('hogbase_parquet_bytes', 'Bytes of the Parquet files of stored events.', stats.parquetBytes),
    gauge('hogbase_parquet_rows', 'Events in Parquet files.', stats.parquetRows),
    gauge('hogbase_dead_letters', 'Dead letters: acknowledged requests or events that could not be stored (npm run cli -- dlq).', stats.deadLetters),
    counter('hogbase_storage_load_failures_total', 'Failed attempts to store logged events (retried, then dead-lettered).', stats.flushFailures),
    counter('hogbase_storage_dedupe_files_read_total', 'Parquet files loads read to drop repeats of stored events that the recent-uuid filter could not rule out (files from before a restart or compacted from the hot table lately, older files holding the time of a late event, every candidate for a load holding a retry); near 0 under a steady batch load.', stats.priorFilesRead),
    {
      name: 'hogbase_storage_work_duration_seconds',
      help: 'Duration of storage work: load (logged events into the store), compaction (hot rows to Parquet), merge (small files into one), person_copy.',
      type: 'histogram',
      samples: Object.entries(stats.workSeconds).map(([work, value]) => ({ labels: { work }, value })),
    },
    { name: 'hogbase_query_duration_seconds', help: 'Duration of events-API statements, to their last row.', type: 'histogram', samples: [{ value: metrics.querySeconds }] },
    gauge('hogbase_storage_memory_bytes', 'Memory the analytical store holds now (capped by DUCKDB_MEMORY_LIMIT).', memory.usedBytes),
    {
      name: 'hogbase_storage_memory_kind_bytes',
      help: 'hogbase_storage_memory_bytes by what holds it, in the analytical store\'s own words (base_table, order_by, object_cache, ...).',
      type: 'gauge',
      samples: Object.entries(memory.byKind).map(([kind, value]) => ({ labels: { kind }, value })),
    },
    gauge('hogbase_storage_memory_limit_bytes', 'The analytical store\'s memory cap (DUCKDB_MEMORY_LIMIT, as the store reads it back).', memory.limitBytes),
    gauge('hogbase_storage_spilled_bytes', 'Bytes the analytical store has spilled to DATA_DIR/tmp.', memory.spilledBytes),
    gauge('process_resident_memory_bytes', 'Resident memory size of the process.', process.memoryUsage.rss()),
    gauge('hogbase_js_heap_bytes', 'The main thread\'s JavaScript heap in use (live objects and garbage not yet collected).', js.heapUsed),
    gauge('hogbase_js_external_bytes', 'Memory the main thread\'s JavaScript objects hold outside its heap (request bodies, buffers).', js.external),
    counter('hogbase_js_forced_collections_total', 'Collections of the main thread\'s heap started early because the process neared its memory budget (twice DUCKDB_MEMORY_LIMIT).', metrics.forcedCollections),
  ];
}
