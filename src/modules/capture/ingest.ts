import { isForm, selectCompression } from '../../core/ingest/decode-payload';
import { prepareIngest, type IngestRequest, type PreparedIngest } from '../../core/ingest/prepare-ingest';
import type { Deps } from '../../deps';
import type { PreparedRows } from '../../pipeline';
import { projectForPublicKey } from '../../http/project-key';
import { newUuidSeed } from '../../ids';

const NO_KEY = 'API key not provided. You can find your project API key in PostHog project settings.';

/**
 * Bodies from this size are decoded and parsed by a worker thread when there is one: for such a
 * batch, `JSON.parse` alone costs the main thread several times what the rest of the request
 * (reading it, the key, the log) costs (see bench/NOTES.md). Smaller bodies stay here: handing
 * one over costs more than parsing it.
 */
const PARSE_ELSEWHERE_MIN_BYTES = 16 * 1024;
/** JSON inflates ~5–10× from gzip: a compressed body is judged by what it will take to parse. */
const GZIP_RATIO = 8;

const parseSize = (body: Uint8Array) => (body[0] === 0x1f && body[1] === 0x8b ? body.length * GZIP_RATIO : body.length);

/**
 * What a body read will take once decoded, at most `max`, as far as its bytes tell: gzip (its
 * magic) or a form (old snippets' `data=`, whose lz64 or base64 gzip unpacks) counts GZIP_RATIO
 * times its size. A body that opens as JSON is read as sent, whatever its content type says
 * (decoding reads it raw too), and costs no look at its headers: the usual single event.
 */
export function decodedSize(body: Uint8Array, headers: Pick<Headers, 'get'>, max: number): number {
  const first = body[0];
  if (first === 0x7b || first === 0x5b) return Math.min(body.length, max);
  return Math.min(isForm(headers.get('content-type'), body) ? body.length * GZIP_RATIO : parseSize(body), max);
}

/**
 * What a body of `declared` bytes will take once decoded, as far as its request tells before
 * the body is read: GZIP_RATIO times that when it names gzip or lz64 (its Content-Encoding or
 * `compression` query parameter, read as decoding reads them) or is posthog-js's gzip, which
 * comes as text/plain; at most `max` (the cap on a decoded body). A compressed body that says
 * nothing, or names it only in its form, is counted again by its bytes once read (`decodedSize`).
 */
export function decodedSizeHint(declared: number, headers: Headers, query: URLSearchParams, max: number): number {
  const named = selectCompression(query.get('compression'), null, headers.get('content-encoding'));
  const compressed = named === 'gzip' || named === 'lz64' || (headers.get('content-type') ?? '').toLowerCase().startsWith('text/plain');
  return Math.min(compressed ? declared * GZIP_RATIO : declared, max);
}

export interface IngestOutcome {
  /** Events logged (as received: ones without a name or distinct id are dropped behind the 200). */
  logged: number;
}

/**
 * decode → authenticate → log. Each step returns a value or throws the AppError that answers
 * the request; resolves once the request is as durable as configured, which is the 200. What
 * PostHog's plugin server does behind Kafka — normalization, persons, definitions, rows — the
 * event store does behind its log, in order, with the pipeline (`src/pipeline`); in cluster mode
 * the log is the cluster's and the writers do it (`storage.intake`).
 */
export function ingest(deps: Deps, req: IngestRequest): Promise<IngestOutcome> {
  const receivedAt = deps.now().getTime();
  // Fixed at receipt and logged with the request: its events without a uuid are named the same
  // if it is processed again (see seededUuids).
  const uuidSeed = newUuidSeed();
  if (deps.ingestParser && parseSize(req.body) >= PARSE_ELSEWHERE_MIN_BYTES) {
    return deps.ingestParser.prepare(req, receivedAt, uuidSeed).then(({ rows, ...prepared }) => logIngest(deps, prepared, receivedAt, uuidSeed, rows));
  }
  try {
    return logIngest(deps, prepareIngest(req, deps.config.MAX_BODY_BYTES, true), receivedAt, uuidSeed, null);
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * authenticate → log. A large body's rows were prepared in its parser thread as it was parsed
 * (`rows`; prepared again from the body there for a project that anonymizes addresses): behind
 * the 200, what is left for this thread is persons. A small body is parsed here for its key:
 * handing each to another thread cost more than the work (this machine's two vCPUs give well
 * under two cores of throughput, so a second thread only pays for large units of work). Its rows
 * are prepared behind the 200, with the other small bodies made durable with it, as one run in
 * that thread when there is one (`ProcessIntake.run`), else here from its parsed events.
 */
async function logIngest(deps: Deps, prepared: PreparedIngest, receivedAt: number, uuidSeed: string, rows: PreparedRows | null): Promise<IngestOutcome> {
  const project = await projectForPublicKey(deps, prepared.token, prepared.projectId, NO_KEY);
  if (prepared.events === 0) return { logged: 0 };
  const logged = prepared.events;
  const context = {
    teamId: project.id,
    receivedAt,
    ip: prepared.ip,
    anonymizeIps: project.settings.anonymize_ips,
    sentAt: prepared.sentAt,
    engage: prepared.engage,
    uuidSeed,
  };
  // Prepared as the thread knew the project's setting: again from the body when it did not (the
  // project's first request since the start, or the setting changed), and the threads told.
  let ready: Promise<PreparedRows> | null = null;
  if (rows !== null) {
    if (rows.anonymizeIps === context.anonymizeIps) ready = Promise.resolve(rows);
    else {
      if (prepared.token !== null) deps.ingestParser!.noteAnonymizing(prepared.token, context.anonymizeIps);
      ready = deps.ingestParser!.prepareBody(context, prepared.body);
    }
  }
  // Returned, not awaited: this frame must not keep the parsed events alive until the flush.
  return deps.storage.intake
    .append({ context, body: prepared.body, events: logged, parsed: prepared.parsed, distinctIds: prepared.distinctIds, prepared: ready })
    .then(() => ({ logged }));
}
