import { decodePayload } from '../../core/ingest/decode-payload';
import { extractEvents } from '../../core/ingest/extract-events';
import { normalizeEvent, type NormalizedEvent } from '../../core/ingest/normalize-event';
import { hotValuesOf, type StoredEventRow } from '../../core/events/columns';
import type { Deps } from '../../deps';
import { uuidv7 } from '../../ids';
import { projectForKey } from './authenticate';

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
  accepted: number;
  dropped: number;
}

/**
 * decode → authenticate → normalize → persons → append. Each step returns a value or throws the
 * AppError that answers the request; events that are dropped (no name, no distinct id) still get
 * the batch a 200, as the spec says. Resolves only once the events are as durable as configured.
 */
export async function ingest(deps: Deps, req: IngestRequest): Promise<IngestOutcome> {
  const maxBytes = deps.config.MAX_BODY_BYTES;
  const decoded = decodePayload({ body: req.body, contentType: req.contentType, contentEncoding: req.contentEncoding, query: req.query, maxBytes });
  const extracted = extractEvents(decoded.payload, { hints: decoded.hints, engage: req.engage });
  const project = await projectForKey(deps, extracted.token, extracted.projectId);
  const now = deps.now();
  const context = {
    now,
    sentAt: extracted.sentAt === null ? null : new Date(extracted.sentAt),
    ip: req.ip,
    anonymizeIps: project.settings.anonymize_ips,
    newUuid: () => uuidv7(now.getTime()),
  };
  const normalized: NormalizedEvent[] = [];
  let dropped = extracted.skipped;
  for (const raw of extracted.events) {
    const result = normalizeEvent(raw, context);
    if ('ok' in result) normalized.push(result.ok);
    else dropped++;
  }
  if (!normalized.length) return { accepted: 0, dropped };

  const { persons, seen, events } = deps.storage;
  await persons.ensureLoaded(project.id);
  const createdAt = now.getTime();
  const rows: StoredEventRow[] = normalized.map((e) => {
    const plan = persons.processEvent(project.id, e);
    seen.record(project.id, e.event, e.timestamp, e.properties, Object.keys(e.set).length ? e.set : null);
    return {
      uuid: e.uuid,
      teamId: project.id,
      event: e.event,
      distinctId: e.distinctId,
      personId: plan.personId,
      properties: JSON.stringify(e.properties),
      timestamp: e.timestamp,
      createdAt,
      elementsChain: e.elementsChain,
      hot: hotValuesOf(e.properties),
    };
  });
  await events.append(rows);
  return { accepted: rows.length, dropped };
}
