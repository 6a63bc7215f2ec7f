import type { PreparedIngest } from '../core/ingest/prepare-ingest';
import type { ErrorKind } from '../errors';
import type { PreparedRows } from '../pipeline';
import { POOLED_MIN_BYTES } from '../storage/events/log/line-buffers';
import type { IntakeContext, RunFailure } from '../storage/events';

/**
 * Messages to an ingest thread:
 * - `parse`: decode and parse a body (`IngestRequest`, the query as its text: URLSearchParams do
 *   not cross threads) and prepare its rows at once (`prepareRows`, for a project that does not
 *   anonymize addresses: the rows are prepared again from the body for one that does), while
 *   its events are fresh: kept for a later message, they outlived the young generation;
 * - `run`: prepare the rows of logged bodies of one project as one (`prepareRequests`), for known
 *   contexts: processing's run of small requests, answered in one reply, or one body prepared
 *   again (a project whose setting was not known to the thread; a large body read back from the
 *   log). The bodies cross as one buffer
 *   (moved) with where each ends, the contexts as one JSON text: cloning them as objects cost
 *   the sending thread more than preparing them had;
 * - `anonymizing`: the keys whose projects anonymize addresses, as the main thread learns them;
 * - `memory`: whether the process is past the memory guard's trigger (a thread then collects smaller heaps and keeps no lines spares).
 */
export type WorkerRequest =
  | ({ type: 'parse'; id: number; receivedAt: number; uuidSeed: string; body: Uint8Array; contentType: string | null; contentEncoding: string | null; query: string; ip: string | null; engage: boolean } & Spares)
  | ({ type: 'run'; id: number; bodies: Uint8Array; ends: Int32Array; contexts: string } & Spares)
  | AnonymizingNote
  | MemoryNote;

/**
 * Lines buffers the main thread's processed copies have written and given back, moved with a
 * `parse` or `run` to be filled again there (`line-buffers.ts`): the thread's replies move its
 * lines here, so without these it would encode every large request into fresh pages.
 */
export interface Spares {
  spares: ArrayBuffer[];
}

/** Sent to every thread, unanswered: `parse` prepares this key's rows without `$ip` (or again with it). */
export interface AnonymizingNote {
  type: 'anonymizing';
  token: string;
  anonymizes: boolean;
}

/**
 * Sent to every thread, unanswered, when the process passes the memory guard's trigger and when
 * it is back under it (src/memory-guard.ts): while past, a thread also collects a smaller heap
 * after a reply, and keeps no lines spares (`keepSpares`).
 */
export interface MemoryNote {
  type: 'memory';
  pastTrigger: boolean;
}

/** The answer to `parse` or `run`, or the AppError that answers it, or a bug. */
export interface WorkerReply {
  id: number;
  prepared?: Omit<PreparedIngest, 'parsed'>;
  rows?: PreparedRows | null;
  /** A `run`'s bodies that could not be read as events (the rest are in `rows`). */
  failed?: RunFailure[];
  error?: { kind: ErrorKind; detail: string; attr: string | null };
  failure?: string;
}

/** The buffers to move with a message: `bytes`' own, when it spans all of it (else it is copied). */
export function movable(bytes: Uint8Array | string): ArrayBuffer[] {
  if (typeof bytes === 'string') return [];
  const buffer = bytes.buffer;
  return buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === buffer.byteLength && bytes.byteLength > 0 ? [buffer] : [];
}

/**
 * Prepared rows' buffers to move: their own when of a pooled size (a smaller one may be a slice
 * of a shared pool, which must not be moved away; copying it costs nothing much). The lines'
 * buffer moves however little of it the lines fill (a spare: copying would clone all of it and
 * leave the copy's pages to fault on this side); the others only when mostly filled.
 */
export function movableRows(rows: PreparedRows): ArrayBuffer[] {
  const out: ArrayBuffer[] = [];
  for (const view of [rows.lines, rows.teams, rows.persons]) {
    const buffer = view.buffer;
    if (!(buffer instanceof ArrayBuffer) || buffer.byteLength < POOLED_MIN_BYTES) continue;
    if (view === rows.lines || view.byteLength * 2 >= buffer.byteLength) out.push(buffer);
  }
  return out;
}
