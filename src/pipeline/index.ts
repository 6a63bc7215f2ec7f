import { parseJson } from '../core/ingest/decode-payload';
import { extractEvents } from '../core/ingest/extract-events';
import { EVENT_LIMITS, LIMIT_DROPS, type LimitDrop } from '../core/ingest/limits';
import { uuidv7 } from '../ids';
import type { Logger } from '../logger';
import type { StorageOptions } from '../storage';
import type { EncodedRows, ProcessIntake } from '../storage/events';
import type { IntakeContext, LoggedRequest, RunFailure } from '../storage/events';
import type { PersonStore } from '../storage/persons/types';
import type { SeenTracker } from '../storage/seen/seen-tracker';
import { createRowApplier } from './apply-rows';
import { newUuidsOf, prepareRows, type PreparedRows } from './prepare-rows';

export { newUuidsOf, prepareRequests, prepareRows, type PreparedRows } from './prepare-rows';

/**
 * A body read back from the log is prepared in another thread from this size: a small one's
 * hand-over costs more than preparing it here.
 */
const ELSEWHERE_MIN_CHARS = 16 * 1024;

/**
 * Prepares rows in another thread (`src/workers/`): a large body read back from the log, or a
 * run of small logged bodies of one project as one (`prepareRequests`).
 */
export interface RowPreparer {
  prepareBody(context: IntakeContext, body: string | Uint8Array): Promise<PreparedRows>;
  prepareRun(requests: readonly LoggedRequest[]): Promise<{ rows: PreparedRows; failed: RunFailure[] }>;
}

/**
 * What happens to a capture request behind its 200, in log order: its events are normalized
 * (timestamps and clock skew against the receive time, `$set`/`$set_once`, `$ip`) and encoded
 * (`prepareRows`: stateless, in a worker thread when there is one), then persons are created,
 * updated and merged, definitions noted and each row given its person (`applyRows`, the main
 * thread). The event store calls this for each logged request, with what it kept of it: rows
 * already prepared (`prepared`, started at receipt), the parsed events, or the body's text.
 *
 * The same runs after a crash on the logged body: everything it reads was fixed at receipt (the
 * context), and person changes are idempotent (`$set`, `$set_once`, `$unset`, merges). An event
 * without a client uuid gets a new one on a replay, which is harmless: the first run's rows were
 * never committed, or the segment would not be replayed.
 */
export function createIntakeProcessor(persons: PersonStore, seen: SeenTracker, preparer?: RowPreparer, logger?: Logger): ProcessIntake & { logged: LoggedProcessor } {
  const applyRows = createRowApplier(persons, seen);
  const processIntake: ProcessIntake = async (ctx, events, text, prepared) => {
    const newUuid = newUuidsOf(ctx);
    let rows: PreparedRows;
    if (prepared) rows = await (prepared as Promise<PreparedRows>);
    else if (events) rows = prepareRows(ctx, events, newUuid);
    else if (preparer && (text?.length ?? 0) >= ELSEWHERE_MIN_CHARS) rows = await preparer.prepareBody(ctx, text ?? '');
    else rows = prepareLogged(ctx, text ?? '', newUuid);
    return apply(ctx, rows);
  };

  function apply(ctx: IntakeContext, rows: PreparedRows): Promise<EncodedRows> {
    if (LIMIT_DROPS.some((reason) => rows.dropped[reason])) noteDropped(ctx.teamId, rows.dropped);
    return applyRows(ctx, rows);
  }

  // A run is one project's (the store's promise): its rows are applied as one request's.
  const run: ProcessIntake['run'] = preparer
    ? async (requests) => {
        const { rows, failed } = await preparer.prepareRun(requests);
        return { rows: await apply(requests[0].context, rows), failed };
      }
    : undefined;
  return Object.assign(processIntake, {
    run,
    logged: (ctx: IntakeContext, text: string, newUuid: () => string) => apply(ctx, prepareLogged(ctx, text, newUuid)),
  });

  /**
   * PostHog's ingestion warning for events over the limits: the request was answered 200, so the
   * log is where such a drop shows. (Events without a name or distinct id are dropped silently,
   * as the spec says.) The totals since the start are the store's counters, in `/metrics`.
   */
  function noteDropped(teamId: number, all: PreparedRows['dropped']) {
    const now: Partial<Record<LimitDrop, number>> = {};
    for (const reason of LIMIT_DROPS) if (all[reason]) now[reason] = all[reason];
    logger?.warn('events dropped: over the per-event limits', { teamId, dropped: now, limits: EVENT_LIMITS });
  }
}

/**
 * A logged body processed by another process than the one that logged it (a cluster writer),
 * naming events without a client uuid with `newUuid` (so that processing it again names them the
 * same).
 */
export type LoggedProcessor = (ctx: IntakeContext, text: string, newUuid: () => string) => Promise<EncodedRows>;

const prepareLogged = (ctx: IntakeContext, text: string, newUuid: () => string): PreparedRows =>
  prepareRows(ctx, extractEvents(parseJson(text), { engage: ctx.engage, logged: true }).events, newUuid);

/** Storage options with this pipeline as the event store's intake processor. */
export function withPipeline(options: StorageOptions, preparer?: RowPreparer): StorageOptions {
  return { ...options, intake: ({ persons, seen }) => createIntakeProcessor(persons, seen, preparer, options.logger) };
}
