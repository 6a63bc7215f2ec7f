import { heapSize } from 'bun:jsc';
import { parentPort, workerData } from 'node:worker_threads';
import { parseJson } from '../core/ingest/decode-payload';
import { extractEvents } from '../core/ingest/extract-events';
import { prepareIngest } from '../core/ingest/prepare-ingest';
import { isAppError } from '../errors';
import { newUuidsOf, prepareRequests, prepareRows, type PreparedRows, type RequestEvents } from '../pipeline/prepare-rows';
import type { IntakeContext, RunFailure } from '../storage/events';
import { giveBack, keepSpares } from '../storage/events/log/line-buffers';
import { movable, movableRows, type WorkerReply, type WorkerRequest } from './ingest-parser-protocol';

/** An ingest thread (see ingest-parser.ts): parses bodies and prepares their rows. */
const { maxBytes } = workerData as { maxBytes: number };
const port = parentPort!;
const utf8 = new TextDecoder();

/** Rows to send: their person inputs as one JSON text (one string crosses threads faster than many objects). */
const crossing = (rows: PreparedRows): PreparedRows => ({ ...rows, people: JSON.stringify(rows.people) });

/** A logged body's events, as processing reads them back from the log. */
const loggedEvents = (context: IntakeContext, body: string | Uint8Array) =>
  extractEvents(parseJson(typeof body === 'string' ? body : utf8.decode(body)), { engage: context.engage, logged: true }).events;

/**
 * The thread's heap size past which it collects its garbage once a reply is sent. A large batch
 * parsed and prepared leaves several times its size of garbage here (its events, their
 * properties' text), which JavaScriptCore collected late enough for the largest bodies to take
 * the process past its memory plan (bench/NOTES.md, body-budget.ts). Between messages little is
 * live, so the collection is short.
 */
const COLLECT_PAST_BYTES = 160 * 1024 * 1024;
/**
 * While the process is past the memory guard's trigger (`MemoryNote`), a heap past this is
 * collected too: DuckDB may hold its whole cap then (an export beside large batches), and the
 * rest must fit beside it. Not smaller: a heap of a few runs' rows is not worth a collection a reply.
 */
const NEAR_CAP_COLLECT_PAST_BYTES = 48 * 1024 * 1024;
/** As the main thread's memory guard last told (`MemoryNote`): it reads the process's size, this thread does not. */
let pastTrigger = false;

function collectIfWorth(): void {
  const heap = heapSize();
  if (heap > COLLECT_PAST_BYTES || (pastTrigger && heap > NEAR_CAP_COLLECT_PAST_BYTES)) Bun.gc(true);
}

/** Keys whose projects anonymize addresses (as the main thread last told). */
const anonymizing = new Set<string>();

port.on('message', (m: WorkerRequest) => {
  if (m.type === 'memory') {
    pastTrigger = m.pastTrigger;
    keepSpares(!pastTrigger);
    return;
  }
  if (m.type === 'anonymizing') {
    if (m.anonymizes) anonymizing.add(m.token);
    else anonymizing.delete(m.token);
    return;
  }
  for (const spare of m.spares) giveBack(spare);
  let reply: WorkerReply;
  let transfer: ArrayBuffer[] = [];
  try {
    if (m.type === 'parse') {
      const { parsed, ...prepared } = prepareIngest(
        { body: m.body, contentType: m.contentType, contentEncoding: m.contentEncoding, query: new URLSearchParams(m.query), ip: m.ip, engage: m.engage },
        maxBytes,
        true,
      );
      const ctx = { receivedAt: m.receivedAt, ip: m.ip, anonymizeIps: prepared.token !== null && anonymizing.has(prepared.token), sentAt: prepared.sentAt };
      const rows = parsed && parsed.length > 0 ? crossing(prepareRows(ctx, parsed, newUuidsOf({ receivedAt: m.receivedAt, uuidSeed: m.uuidSeed }))) : null;
      reply = { id: m.id, prepared, rows };
      transfer = [...movable(prepared.body), ...(rows ? movableRows(rows) : [])];
    } else {
      // A body that cannot be read is left out and named (its frame goes to the dead letters); the others go on.
      const requests: RequestEvents[] = [];
      const failed: RunFailure[] = [];
      const contexts = JSON.parse(m.contexts) as IntakeContext[];
      contexts.forEach((context, index) => {
        try {
          const body = m.bodies.subarray(index === 0 ? 0 : m.ends[index - 1], m.ends[index]);
          requests.push({ ctx: context, events: loggedEvents(context, body), newUuid: newUuidsOf(context) });
        } catch (error) {
          failed.push({ index, error: String(error) });
        }
      });
      const rows = crossing(prepareRequests(requests));
      reply = { id: m.id, rows, failed };
      transfer = movableRows(rows);
    }
  } catch (error) {
    reply = isAppError(error) ? { id: m.id, error: { kind: error.kind, detail: error.detail, attr: error.attr } } : { id: m.id, failure: String(error) };
  }
  port.postMessage(reply, transfer);
  collectIfWorth();
});
