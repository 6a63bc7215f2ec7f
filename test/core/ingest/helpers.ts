/** Small builders shared by the ingest-core tests. */
import { crc32, deflateRawSync, constants } from 'node:zlib';
import { AppError } from '../../../src/errors';
import { decodePayload, type DecodePayloadInput } from '../../../src/core/ingest/decode-payload';

export const MB = 1024 * 1024;

export const bytes = (text: string) => new Uint8Array(Buffer.from(text, 'utf8'));

export function decode(body: Uint8Array | string, options: Partial<Omit<DecodePayloadInput, 'body' | 'query'>> & { query?: string } = {}) {
  return decodePayload({
    body: typeof body === 'string' ? bytes(body) : body,
    contentType: options.contentType ?? null,
    contentEncoding: options.contentEncoding ?? null,
    query: new URLSearchParams(options.query ?? ''),
    maxBytes: options.maxBytes ?? 20 * MB,
  });
}

/** The AppError `run` throws, as a plain value to compare with `toEqual`. */
export function thrown(run: () => unknown): { kind: string; status: number; detail: string; attr: string | null } | 'nothing thrown' {
  try {
    run();
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    return { kind: error.kind, status: error.status, detail: error.detail, attr: error.attr };
  }
  return 'nothing thrown';
}

/**
 * A valid single-member gzip of `megabytes` MiB of zeros, built in milliseconds: one deflate
 * block of 1 MiB of zeros, flushed so it ends on a byte boundary and resets the window, repeated;
 * then an empty final block and the real CRC-32 and size.
 */
export function gzipBombOfZeros(megabytes: number): Uint8Array {
  const zeros = new Uint8Array(MB);
  const block = deflateRawSync(zeros, { level: 9, finishFlush: constants.Z_FULL_FLUSH });
  let crc = 0;
  for (let i = 0; i < megabytes; i++) crc = crc32(zeros, crc);
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc >>> 0, 0);
  trailer.writeUInt32LE((megabytes * MB) % 2 ** 32, 4);
  const header = Buffer.from('1f8b08000000000000ff', 'hex');
  return new Uint8Array(Buffer.concat([header, ...Array<Buffer>(megabytes).fill(block), Buffer.from([3, 0]), trailer]));
}

/**
 * An lz64 stream that repeats one character: a literal, then codes that each name the entry about
 * to be created (one character longer than the last). `codes` codes expand to about codes²/2
 * characters, so the output grows quadratically with the input.
 */
export function lz64BombOfA(codes: number): string {
  const chars: number[] = [];
  let value = 0;
  let used = 0;
  const write = (code: number, bitCount: number) => {
    for (let bit = 0; bit < bitCount; bit++) {
      value = (value << 1) | ((code >> bit) & 1);
      if (++used === 6) {
        chars.push(value);
        value = 0;
        used = 0;
      }
    }
  };
  write(0, 2);
  write('a'.charCodeAt(0), 8);
  let dictSize = 4;
  let codeBits = 3;
  let enlargeIn = 4;
  for (let i = 0; i < codes; i++) {
    write(dictSize++, codeBits);
    if (--enlargeIn === 0) enlargeIn = 2 ** codeBits++;
  }
  write(2, codeBits);
  if (used > 0) write(0, 6 - used);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  return chars.map((c) => alphabet[c]).join('');
}
