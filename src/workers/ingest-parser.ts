import { Worker } from 'node:worker_threads';
import type { IngestRequest, PreparedIngest } from '../core/ingest/prepare-ingest';
import type { IngestParser } from '../deps';
import { AppError } from '../errors';
import type { Logger } from '../logger';
import { movable, type ParseReply, type ParseRequest } from './ingest-parser-protocol';

export interface IngestParserPool extends IngestParser {
  close(): Promise<void>;
}

/**
 * `threads` worker threads that decode and parse capture bodies (`prepareIngest`), so the main
 * thread's time per large batch is the socket, the key check and the log. A body goes to the
 * thread with the fewest bodies in hand; it is moved (not copied) both ways when it owns its
 * buffer, and the parsed events stay in the worker (copying objects back costs more than
 * parsing them again behind the 200, which happens only when processing comes soon).
 */
export function createIngestParser(threads: number, maxBytes: number, logger: Logger): IngestParserPool {
  const pool = Array.from({ length: threads }, () => startThread(maxBytes, logger));
  return {
    prepare(req) {
      let best = pool[0];
      for (const t of pool) if (t.inHand < best.inHand) best = t;
      return best.prepare(req);
    },
    async close() {
      await Promise.all(pool.map((t) => t.worker.terminate()));
    },
  };
}

interface ParserThread {
  worker: Worker;
  inHand: number;
  prepare(req: IngestRequest): Promise<PreparedIngest>;
}

function startThread(maxBytes: number, logger: Logger): ParserThread {
  const worker = new Worker(new URL('./ingest-parser-worker.ts', import.meta.url), { workerData: { maxBytes } });
  const waiting = new Map<number, { resolve: (p: PreparedIngest) => void; reject: (e: unknown) => void }>();
  let nextId = 0;
  const thread: ParserThread = {
    worker,
    inHand: 0,
    prepare(req) {
      const id = ++nextId;
      const message: ParseRequest = { id, body: req.body, contentType: req.contentType, contentEncoding: req.contentEncoding, query: req.query.toString(), ip: req.ip, engage: req.engage };
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        thread.inHand++;
        worker.postMessage(message, movable(req.body));
      });
    },
  };
  worker.on('message', (reply: ParseReply) => {
    const w = waiting.get(reply.id);
    if (!w) return;
    waiting.delete(reply.id);
    thread.inHand--;
    if (reply.error) w.reject(new AppError(reply.error.kind, reply.error.detail, reply.error.attr));
    else if (reply.failure) w.reject(new Error(`ingest parser: ${reply.failure}`));
    else w.resolve({ ...reply.prepared!, parsed: null });
  });
  worker.on('error', (error) => {
    // Bodies in hand are answered with a 500 (the client retries); the server cannot go on without it.
    logger.error('ingest parser thread failed', { error });
    for (const w of waiting.values()) w.reject(error);
    waiting.clear();
    process.exit(1);
  });
  worker.unref();
  return thread;
}
