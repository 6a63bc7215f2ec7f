import { decodePayload } from './decode-payload';
import { extractEvents } from './extract-events';
import { distinctIdsNamed } from './normalize-event';

/** A capture request as ingestion reads it: the body (already capped), its headers, the query, the client. */
export interface IngestRequest {
  body: Uint8Array;
  contentType: string | null;
  contentEncoding: string | null;
  query: URLSearchParams;
  ip: string | null;
  /** `/engage/`: old posthog-js identify calls without an event name. */
  engage: boolean;
}

/**
 * A capture request decoded, its events found and its key read: everything but the key check
 * and the log, which need the storage. Made on the main thread, or in a worker thread for a
 * large body (`src/workers/ingest-parser.ts`).
 */
export interface PreparedIngest {
  token: string | null;
  projectId: string | null;
  sentAt: number | null;
  ip: string | null;
  engage: boolean;
  /** Events in the body (as received: ones without a name or distinct id are dropped behind the 200). */
  events: number;
  distinctIds: string[];
  /** The decoded body: its exact UTF-8 bytes when the request carried them so, else its text. */
  body: Uint8Array | string;
  /** The events parsed, when they stay in this thread (not handed to another). */
  parsed: unknown[] | null;
}

/** decode → find the events and the key; throws the AppError that answers a bad body. */
export function prepareIngest(req: IngestRequest, maxBytes: number, keepParsed: boolean): PreparedIngest {
  const decoded = decodePayload({ body: req.body, contentType: req.contentType, contentEncoding: req.contentEncoding, query: req.query, maxBytes });
  const extracted = extractEvents(decoded.payload, { hints: decoded.hints, engage: req.engage });
  const distinctIds: string[] = [];
  for (const raw of extracted.events) distinctIdsNamed(raw, distinctIds);
  return {
    token: extracted.token,
    projectId: extracted.projectId,
    sentAt: extracted.sentAt,
    ip: req.ip,
    engage: req.engage,
    events: extracted.events.length,
    distinctIds,
    body: decoded.bytes ?? decoded.text,
    parsed: keepParsed ? extracted.events : null,
  };
}
