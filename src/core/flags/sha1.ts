/**
 * SHA-1 of short text, in plain JS: a flag check hashes once or twice per flag, and creating a
 * native hash object, feeding it a string and reading a digest buffer costs several times the
 * arithmetic of one or two 64-byte blocks. Only the first 60 bits of the digest are used (h0 and
 * the top of h1). Text is UTF-8 encoded like Node's `update(text, 'utf8')` (lone surrogates become
 * U+FFFD); the tests compare it with node:crypto.
 */
let buffer = new Uint8Array(256);
const words = new Int32Array(80);
const utf8 = new TextEncoder();

/** Writes ASCII `text` into `buffer` at `offset`; the offset after it, or -1 at the first non-ASCII character. */
function writeAscii(text: string, offset: number): number {
  const length = text.length;
  if (buffer.length < offset + length + 72) {
    const grown = new Uint8Array((offset + length + 72) * 2);
    grown.set(buffer.subarray(0, offset));
    buffer = grown;
  }
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code > 0x7f) return -1;
    buffer[offset + i] = code;
  }
  return offset + length;
}

/** UTF-8 bytes of `a + b + c + d` into `buffer` (with room for the padding); their count. */
function encodeIntoBuffer(a: string, b: string, c: string, d: string): number {
  let length = writeAscii(a, 0);
  if (length >= 0) length = writeAscii(b, length);
  if (length >= 0) length = writeAscii(c, length);
  if (length >= 0) length = writeAscii(d, length);
  if (length >= 0) return length;
  const encoded = utf8.encode(a + b + c + d);
  if (buffer.length < encoded.length + 72) buffer = new Uint8Array((encoded.length + 72) * 2);
  buffer.set(encoded);
  return encoded.length;
}

/**
 * Message words of a short all-ASCII message (at most 55 bytes: one block with its padding),
 * written straight into `words` from the text; false when the parts are longer or not ASCII.
 */
function wordsOfShortAscii(part1: string, part2: string, part3: string, part4: string): boolean {
  const length = part1.length + part2.length + part3.length + part4.length;
  if (length > 55) return false;
  const w = words;
  for (let i = 0; i < 16; i++) w[i] = 0;
  let position = putAscii(part1, 0);
  if (position >= 0) position = putAscii(part2, position);
  if (position >= 0) position = putAscii(part3, position);
  if (position >= 0) position = putAscii(part4, position);
  if (position < 0) return false;
  w[position >> 2] |= 0x80 << (24 - ((position & 3) << 3));
  w[15] = length * 8;
  return true;
}

/** ASCII `text` into the big-endian message words from byte `position`; the position after it, or -1. */
function putAscii(text: string, position: number): number {
  const w = words;
  for (let i = 0; i < text.length; i++, position++) {
    const code = text.charCodeAt(i);
    if (code > 0x7f) return -1;
    w[position >> 2] |= code << (24 - ((position & 3) << 3));
  }
  return position;
}

/** The first 60 bits of sha1 of the concatenated parts, as a number (correctly rounded, see below). */
export function sha1Prefix60(part1: string, part2: string, part3: string, part4: string): number {
  // The usual flag hash (`<key>.<distinct id><salt>`) is one block of ASCII: no byte buffer needed.
  if (wordsOfShortAscii(part1, part2, part3, part4)) return digestPrefix(0);
  const length = encodeIntoBuffer(part1, part2, part3, part4);
  const total = (((length + 8) >>> 6) + 1) * 64;
  buffer[length] = 0x80;
  buffer.fill(0, length + 1, total - 8);
  const bits = length * 8;
  const high = Math.floor(bits / 2 ** 32);
  buffer[total - 8] = high >>> 24;
  buffer[total - 7] = high >>> 16;
  buffer[total - 6] = high >>> 8;
  buffer[total - 5] = high;
  buffer[total - 4] = bits >>> 24;
  buffer[total - 3] = bits >>> 16;
  buffer[total - 2] = bits >>> 8;
  buffer[total - 1] = bits;
  return digestPrefix(total);
}

/**
 * SHA-1 over `total` bytes of `buffer` (already padded), or over the one block already in
 * `words` when `total` is 0.
 */
function digestPrefix(total: number): number {
  let h0 = 0x67452301;
  let h1 = 0xefcdab89 | 0;
  let h2 = 0x98badcfe | 0;
  let h3 = 0x10325476;
  let h4 = 0xc3d2e1f0 | 0;
  const w = words;
  const blocks = total === 0 ? 64 : total;
  for (let offset = 0; offset < blocks; offset += 64) {
    if (total !== 0) {
      for (let i = 0; i < 16; i++) {
        const j = offset + i * 4;
        w[i] = (buffer[j] << 24) | (buffer[j + 1] << 16) | (buffer[j + 2] << 8) | buffer[j + 3];
      }
    }
    for (let i = 16; i < 80; i++) {
      const x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16];
      w[i] = (x << 1) | (x >>> 31);
    }
    let a = h0;
    let b = h1;
    let c = h2;
    let d = h3;
    let e = h4;
    let t = 0;
    for (let i = 0; i < 20; i++) {
      t = (((a << 5) | (a >>> 27)) + ((b & c) | (~b & d)) + e + w[i] + 0x5a827999) | 0;
      e = d;
      d = c;
      c = (b << 30) | (b >>> 2);
      b = a;
      a = t;
    }
    for (let i = 20; i < 40; i++) {
      t = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e + w[i] + 0x6ed9eba1) | 0;
      e = d;
      d = c;
      c = (b << 30) | (b >>> 2);
      b = a;
      a = t;
    }
    for (let i = 40; i < 60; i++) {
      t = (((a << 5) | (a >>> 27)) + ((b & c) | (b & d) | (c & d)) + e + w[i] - 0x70e44324) | 0;
      e = d;
      d = c;
      c = (b << 30) | (b >>> 2);
      b = a;
      a = t;
    }
    for (let i = 60; i < 80; i++) {
      t = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e + w[i] - 0x359d3e2a) | 0;
      e = d;
      d = c;
      c = (b << 30) | (b >>> 2);
      b = a;
      a = t;
    }
    h0 = (h0 + a) | 0;
    h1 = (h1 + b) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0;
  }
  // The 60-bit prefix (15 hex digits) exceeds Number.MAX_SAFE_INTEGER and must round to nearest
  // with ties to even, exactly like Python's int → float and Rust's u64 `as f64`, so ids whose
  // prefix falls on a rounding tie land in the same bucket as in PostHog. `hi * 2^28` is exact
  // (32 significant bits), so the one rounding of the addition is that correct rounding.
  return (h0 >>> 0) * 2 ** 28 + ((h1 >>> 0) >>> 4);
}
