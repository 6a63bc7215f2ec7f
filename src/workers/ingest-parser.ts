import { Worker } from 'node:worker_threads';
import type { IngestRequest, PreparedIngest } from '../core/ingest/prepare-ingest';
import type { IngestParser } from '../deps';
import { AppError } from '../errors';
import type { Logger } from '../logger';
import type { PreparedRows, RowPreparer } from '../pipeline';
import type { IntakeContext, LoggedRequest } from '../storage/events';
import { takeSpares } from '../storage/events/log/line-buffers';
import { movable, type AnonymizingNote, type MemoryNote, type WorkerReply, type WorkerRequest } from './ingest-parser-protocol';

export interface IngestParserPool extends IngestParser, RowPreparer {
  /** Whether the process is past the memory guard's trigger: while it is, the threads also collect smaller heaps and keep no lines spares (`MemoryNote`). */
  notePastTrigger(past: boolean): void;
  close(): Promise<void>;
}

/**
 * `threads` worker threads that decode and parse capture bodies (`prepareIngest`) and prepare
 * their rows (`prepareRows`: normalization and encoding) in the same step, while the parsed
 * events are fresh, so the main thread's time per large batch is the socket, the key check, the
 * log and the persons, and each body is parsed once. A body goes to the thread with the fewest
 * messages in hand and is moved (not copied) both ways when it owns its buffer; the rows'
 * buffers are moved back. `prepareBody` prepares a body's rows again for a known context (a
 * project that anonymizes addresses, a large body read back from the log); `prepareRun`, the
 * rows of a run of small logged bodies as one.
 */
export function createIngestParser(threads: number, maxBytes: number, logger: Logger): IngestParserPool {
  const pool = Array.from({ length: threads }, () => startThread(maxBytes, logger));
  const least = () => {
    let best = pool[0];
    for (const t of pool) if (t.inHand < best.inHand) best = t;
    return best;
  };
  /** A note every thread keeps (unanswered). */
  const tellAll = (note: AnonymizingNote | MemoryNote) => {
    for (const t of pool) t.worker.postMessage(note);
  };
  let nextId = 0;
  const prepareRun = (items: readonly LoggedRequest[]) => {
    const { bodies, ends } = joinBodies(items);
    const contexts = JSON.stringify(items.map((item) => item.context));
    const spares = takeSpares();
    return least()
      .ask({ type: 'run', id: ++nextId, bodies, ends, contexts, spares }, [...movable(bodies), ...movable(new Uint8Array(ends.buffer)), ...spares])
      .then((reply) => ({ rows: reply.rows!, failed: reply.failed ?? [] }));
  };
  return {
    async prepare(req, receivedAt, uuidSeed) {
      const spares = takeSpares();
      const message: WorkerRequest = {
        type: 'parse', id: ++nextId, receivedAt, uuidSeed, body: req.body, contentType: req.contentType, contentEncoding: req.contentEncoding, query: req.query.toString(), ip: req.ip, engage: req.engage, spares,
      };
      const reply = await least().ask(message, [...movable(req.body), ...spares]);
      return { ...reply.prepared!, parsed: null, rows: reply.rows ?? null };
    },
    notePastTrigger(pastTrigger) {
      tellAll({ type: 'memory', pastTrigger });
    },
    noteAnonymizing(token, anonymizes) {
      tellAll({ type: 'anonymizing', token, anonymizes });
    },
    // A run of one: a body that cannot be read rejects, as its processing alone would throw.
    prepareBody(context: IntakeContext, body: string | Uint8Array): Promise<PreparedRows> {
      return prepareRun([{ context, body }]).then(({ rows, failed }) => {
        if (failed.length > 0) throw new Error(failed[0].error);
        return rows;
      });
    },
    prepareRun,
    // Asks in hand and any made later are refused, not left waiting for a thread that is gone.
    async close() {
      await Promise.all(pool.map((t) => t.close()));
    },
  };
}

const utf8 = new TextEncoder();

/** The bodies of a run as one new buffer (theirs may still be the log's), and where each ends in it. */
function joinBodies(items: readonly LoggedRequest[]): { bodies: Uint8Array; ends: Int32Array } {
  let size = 0;
  for (const { body } of items) size += typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
  const bodies = new Uint8Array(size);
  const ends = new Int32Array(items.length);
  let at = 0;
  items.forEach(({ body }, i) => {
    if (typeof body === 'string') at += utf8.encodeInto(body, bodies.subarray(at)).written;
    else {
      bodies.set(body, at);
      at += body.byteLength;
    }
    ends[i] = at;
  });
  return { bodies, ends };
}

interface ParserThread {
  worker: Worker;
  inHand: number;
  ask(message: Exclude<WorkerRequest, AnonymizingNote | MemoryNote>, transfer: ArrayBuffer[]): Promise<WorkerReply>;
  close(): Promise<void>;
}

function startThread(maxBytes: number, logger: Logger): ParserThread {
  const worker = new Worker(new URL('./ingest-parser-worker.ts', import.meta.url), { workerData: { maxBytes } });
  const waiting = new Map<number, { resolve: (r: WorkerReply) => void; reject: (e: unknown) => void }>();
  let closed = false;
  const thread: ParserThread = {
    worker,
    inHand: 0,
    ask(message, transfer) {
      if (closed) return Promise.reject(new Error('ingest thread closed'));
      return new Promise((resolve, reject) => {
        waiting.set(message.id, { resolve, reject });
        thread.inHand++;
        worker.postMessage(message, transfer);
      });
    },
    async close() {
      closed = true;
      await worker.terminate();
      for (const w of waiting.values()) w.reject(new Error('ingest thread closed'));
      waiting.clear();
    },
  };
  worker.on('message', (reply: WorkerReply) => {
    const w = waiting.get(reply.id);
    if (!w) return;
    waiting.delete(reply.id);
    thread.inHand--;
    if (reply.error) w.reject(new AppError(reply.error.kind, reply.error.detail, reply.error.attr));
    else if (reply.failure) w.reject(new Error(`ingest thread: ${reply.failure}`));
    else w.resolve(reply);
  });
  worker.on('error', (error) => {
    // Bodies in hand are answered with a 500 (the client retries); the server cannot go on without it.
    logger.error('ingest thread failed', { error });
    for (const w of waiting.values()) w.reject(error);
    waiting.clear();
    process.exit(1);
  });
  worker.unref();
  return thread;
}
