import { AppError, clientClosed } from '../errors';

const tooLarge = (max: number) => new AppError('payload_too_large', `Request body is larger than the limit of ${max} bytes.`);

/**
 * A chunked body read past `bytes`: the read waits for `reached` (given the bytes read so far)
 * before it goes on, and stops with its error if it fails; it resolves with the size past which
 * it is called again (a caller that counts bodies in hand takes room for a larger one there).
 */
export interface ReadPast {
  bytes: number;
  reached: (read: number) => Promise<number>;
}

/**
 * Read a request body into one buffer, never holding more than `max` bytes: a declared
 * Content-Length over the cap is refused before reading, and a chunked body is cut off as soon
 * as it crosses the cap.
 */
export function readBodyCapped(request: Request, max: number, past?: ReadPast): Promise<Uint8Array> {
  const declared = request.headers.get('content-length');
  if (declared === null) return readStreamCapped(request, max, past).catch((error) => cutShort(request, error));
  if (Number(declared) > max) return Promise.reject(tooLarge(max));
  // Known length within the cap: one read of the whole body, handed back as it is (no async
  // wrapper around it, no stream made of `request.body`: both cost more than reading a small body).
  return request.bytes().catch((error) => cutShort(request, error));
}

/** A read that failed because the client left is `client_closed`, not a failure of this server. */
function cutShort(request: Request, error: unknown): never {
  throw request.signal.aborted ? clientClosed() : error;
}

/** A body of unknown length (chunked), cut off as soon as it crosses the cap. */
async function readStreamCapped(request: Request, max: number, past?: ReadPast): Promise<Uint8Array> {
  const stream = request.body;
  if (!stream) return new Uint8Array(0);
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  let next = past?.bytes ?? Number.POSITIVE_INFINITY;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(max);
    }
    if (total > next) {
      try {
        next = await past!.reached(total);
      } catch (error) {
        await reader.cancel().catch(() => undefined);
        throw error;
      }
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.byteLength;
  }
  return out;
}
