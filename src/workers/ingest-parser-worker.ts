import { parentPort, workerData } from 'node:worker_threads';
import { parseJson } from '../core/ingest/decode-payload';
import { extractEvents } from '../core/ingest/extract-events';
import { prepareIngest } from '../core/ingest/prepare-ingest';
import { isAppError } from '../errors';
import { uuidv7 } from '../ids';
import { prepareRows } from '../pipeline/prepare-rows';
import { movable, movableRows, type WorkerReply, type WorkerRequest } from './ingest-parser-protocol';

/** An ingest thread (see ingest-parser.ts): parses bodies, and prepares their rows once their project is known. */
const { maxBytes } = workerData as { maxBytes: number };
const port = parentPort!;
/** Parsed events of requests whose rows are asked for next (ticket → events). */
const kept = new Map<number, unknown[]>();
const utf8 = new TextDecoder();

port.on('message', (m: WorkerRequest) => {
  if (m.type === 'release') {
    kept.delete(m.ticket);
    return;
  }
  let reply: WorkerReply;
  let transfer: ArrayBuffer[] = [];
  try {
    if (m.type === 'parse') {
      const { parsed, ...prepared } = prepareIngest(
        { body: m.body, contentType: m.contentType, contentEncoding: m.contentEncoding, query: new URLSearchParams(m.query), ip: m.ip, engage: m.engage },
        maxBytes,
        m.keep,
      );
      const ticket = m.keep && parsed && parsed.length > 0 ? m.id : null;
      if (ticket !== null) kept.set(ticket, parsed!);
      reply = { id: m.id, prepared: { ...prepared, ticket } };
      transfer = movable(prepared.body);
    } else if (m.type === 'bodies') {
      const batch: NonNullable<WorkerReply['batch']> = [];
      for (const { body, context } of m.items) {
        try {
          const text = typeof body === 'string' ? body : utf8.decode(body);
          batch.push({ rows: prepareRows(context, extractEvents(parseJson(text), { engage: context.engage }).events, () => uuidv7(context.receivedAt)) });
        } catch (error) {
          batch.push({ failure: String(error) });
        }
      }
      reply = { id: m.id, batch };
    } else {
      const ctx = m.context;
      let events: unknown[];
      if (m.ticket !== null) {
        const found = kept.get(m.ticket);
        if (!found) throw new Error(`no events kept under ticket ${m.ticket}`);
        kept.delete(m.ticket);
        events = found;
      } else events = extractEvents(parseJson(m.text ?? ''), { engage: ctx.engage }).events;
      const rows = prepareRows(ctx, events, () => uuidv7(ctx.receivedAt));
      reply = { id: m.id, rows };
      transfer = movableRows(rows);
    }
  } catch (error) {
    reply = isAppError(error) ? { id: m.id, error: { kind: error.kind, detail: error.detail, attr: error.attr } } : { id: m.id, failure: String(error) };
  }
  port.postMessage(reply, transfer);
});
