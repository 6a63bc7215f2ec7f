import type { PreparedIngest } from '../core/ingest/prepare-ingest';
import type { ErrorKind } from '../errors';

/** A body to decode and parse (`IngestRequest`, with the query as its text: URLSearchParams do not cross threads). */
export interface ParseRequest {
  id: number;
  body: Uint8Array;
  contentType: string | null;
  contentEncoding: string | null;
  query: string;
  ip: string | null;
  engage: boolean;
}

/** The prepared request (without its parsed events), or the AppError that answers it, or a bug. */
export interface ParseReply {
  id: number;
  prepared?: Omit<PreparedIngest, 'parsed'>;
  error?: { kind: ErrorKind; detail: string; attr: string | null };
  failure?: string;
}

/** The buffers to move with a message: `bytes`' own, when it spans all of it (else it is copied). */
export function movable(bytes: Uint8Array | string): ArrayBuffer[] {
  if (typeof bytes === 'string') return [];
  const buffer = bytes.buffer;
  return buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === buffer.byteLength && bytes.byteLength > 0 ? [buffer] : [];
}
