import { decodePayload } from '../../core/ingest/decode-payload';
import { extractEvents } from '../../core/ingest/extract-events';
import { distinctIdsNamed } from '../../core/ingest/normalize-event';
import type { Deps } from '../../deps';
import { projectForPublicKey } from '../../http/project-key';

const NO_KEY = 'API key not provided. You can find your project API key in PostHog project settings.';

export interface IngestRequest {
  body: Uint8Array;
  contentType: string | null;
  contentEncoding: string | null;
  query: URLSearchParams;
  ip: string | null;
  /** `/engage/`: old posthog-js identify calls without an event name. */
  engage: boolean;
}

export interface IngestOutcome {
  /** Events logged (as received: ones without a name or distinct id are dropped behind the 200). */
  logged: number;
}

/**
 * decode → authenticate → log. Each step returns a value or throws the AppError that answers
 * the request; resolves once the request is as durable as configured, which is the 200. What
 * PostHog's plugin server does behind Kafka — normalization, persons, definitions, rows — the
 * event store does behind its log, in order (`storage/intake-pipeline.ts`).
 */
export async function ingest(deps: Deps, req: IngestRequest): Promise<IngestOutcome> {
  const maxBytes = deps.config.MAX_BODY_BYTES;
  const decoded = decodePayload({ body: req.body, contentType: req.contentType, contentEncoding: req.contentEncoding, query: req.query, maxBytes });
  const extracted = extractEvents(decoded.payload, { hints: decoded.hints, engage: req.engage });
  const project = await projectForPublicKey(deps, extracted.token, extracted.projectId, NO_KEY);
  if (extracted.events.length === 0) return { logged: 0 };
  const distinctIds: string[] = [];
  for (const raw of extracted.events) distinctIdsNamed(raw, distinctIds);
  const logged = extracted.events.length;
  // Returned, not awaited: this frame must not keep the parsed events alive until the flush.
  return deps.storage.events.appendIntake({
    context: {
      teamId: project.id,
      receivedAt: deps.now().getTime(),
      ip: req.ip,
      anonymizeIps: project.settings.anonymize_ips,
      sentAt: extracted.sentAt,
      engage: req.engage,
    },
    text: decoded.text,
    bytes: decoded.bytes,
    events: logged,
    parsed: extracted.events,
    distinctIds,
  }).then(() => ({ logged }));
}
