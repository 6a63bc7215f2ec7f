import { parentPort, workerData } from 'node:worker_threads';
import { prepareIngest } from '../core/ingest/prepare-ingest';
import { isAppError } from '../errors';
import { movable, type ParseReply, type ParseRequest } from './ingest-parser-protocol';

/** A parser thread (see ingest-parser.ts): `prepareIngest` for each body it is sent. */
const { maxBytes } = workerData as { maxBytes: number };
const port = parentPort!;

port.on('message', (m: ParseRequest) => {
  let reply: ParseReply;
  try {
    const { parsed: _, ...prepared } = prepareIngest(
      { body: m.body, contentType: m.contentType, contentEncoding: m.contentEncoding, query: new URLSearchParams(m.query), ip: m.ip, engage: m.engage },
      maxBytes,
      false,
    );
    reply = { id: m.id, prepared };
  } catch (error) {
    reply = isAppError(error) ? { id: m.id, error: { kind: error.kind, detail: error.detail, attr: error.attr } } : { id: m.id, failure: String(error) };
  }
  port.postMessage(reply, reply.prepared ? movable(reply.prepared.body) : []);
});
