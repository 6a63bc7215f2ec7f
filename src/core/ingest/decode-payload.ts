/**
 * Request body → JSON value, the way PostHog's capture reads it (Django `load_data_from_request`,
 * Rust `v0_request.rs`): the data comes from `?data=`, a form field `data=` or the raw body; the
 * compression from `?compression=`, the form field `compression` or `Content-Encoding`; with no
 * hint, gzip is recognised by its magic bytes (posthog-js sends gzip as text/plain with no query)
 * and base64 by its alphabet; a gzip hint over bytes that are not gzip is read as no hint.
 *
 * Every stage is capped at `maxBytes` of OUTPUT, so a small gzip or lz64 bomb is refused with 413
 * as soon as it passes the cap, with memory bounded by the cap. Malformed input of any kind
 * (compression, base64, UTF-8, JSON) is a 400 `invalid_payload` whose detail starts like
 * PostHog's: `Malformed request data: ...`.
 */
import { mayHoldLoneSurrogates, wellFormed } from './well-formed';
import { isUtf8 } from 'node:buffer';
import { gunzipSync } from 'node:zlib';
import { AppError } from '../../errors';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from './json-depth';
import { decompressLz64 } from './lz64';

export interface DecodePayloadInput {
  body: Uint8Array;
  contentType: string | null;
  contentEncoding: string | null;
  query: URLSearchParams;
  /** Cap on the raw body and on the output of every decoding stage. */
  maxBytes: number;
}

/** Values PostHog also reads outside the JSON: from the query string first, then the form body. */
export interface PayloadHints {
  /** `token` / `api_key`. */
  token: string | null;
  projectId: string | null;
  /** Query `_` (client send time, digits) or form `sent_at`, unparsed. */
  sentAt: string | null;
}

export interface DecodedPayload {
  payload: unknown;
  /** The JSON text it was parsed from (what the event log keeps). */
  text: string;
  /** `text` as UTF-8 exactly, when the request carried it so (saves encoding it again), else null. */
  bytes: Uint8Array | null;
  hints: PayloadHints;
  /** What was undone (hinted or detected), for logs and metrics. */
  compression: Compression;
}

export type Compression = 'gzip' | 'lz64' | 'base64' | 'none';

const COMPRESSION_ALIASES: Record<string, Compression> = {
  gzip: 'gzip',
  'gzip-js': 'gzip',
  'x-gzip': 'gzip',
  lz64: 'lz64',
  'lz-string': 'lz64',
  base64: 'base64',
  b64: 'base64',
};

const NO_DATA =
  'No data found. Make sure to use a POST request when sending the payload in the body of the request.';
const utf8 = new TextDecoder('utf-8');

const malformed = (message: string) => new AppError('invalid_payload', `Malformed request data: ${message}`);
const tooLarge = (maxBytes: number): never => {
  throw new AppError('payload_too_large', `Request too large: the decoded payload is over ${maxBytes} bytes.`);
};

export function decodePayload(input: DecodePayloadInput): DecodedPayload {
  if (input.body.byteLength > input.maxBytes) tooLarge(input.maxBytes);
  const { data, form } = selectData(input);
  const compression = selectCompression(input.query.get('compression'), form?.get('compression') ?? null, input.contentEncoding);
  const decoded = decompress(data, compression, input.maxBytes);
  if (!/\S/.test(decoded.text)) throw new AppError('invalid_payload', NO_DATA);
  if (exceedsJsonDepth(decoded.text, MAX_JSON_DEPTH)) throw malformed(`JSON nested deeper than ${MAX_JSON_DEPTH} levels.`);
  return { payload: parseJson(decoded.text), text: decoded.text, bytes: decoded.bytes ?? null, hints: readHints(input.query, form), compression: decoded.compression };
}

/** Rust order: `?data=` wins, then a form's `data` field, then the raw body. */
function selectData({ body, contentType, query }: DecodePayloadInput): { data: Uint8Array | string; form: URLSearchParams | null } {
  const form = isForm(contentType, body) ? new URLSearchParams(decodeUtf8(body)) : null;
  const queryData = query.get('data');
  if (queryData) return { data: queryData, form };
  // A JSON body posted with curl's default form content type has no `data` field: read it raw.
  if (form?.has('data')) return { data: form.get('data') ?? '', form };
  return { data: body, form: null };
}

/** A form body (`data=` and `compression=` fields): its data may be base64 or lz64, and compressed. */
export function isForm(contentType: string | null, body: Uint8Array): boolean {
  const mediaType = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (mediaType === 'application/x-www-form-urlencoded') return true;
  // Old snippets post `data=...` as text/plain.
  return body[0] === 0x64 && body[1] === 0x61 && body[2] === 0x74 && body[3] === 0x61 && body[4] === 0x3d;
}

/** The compression a request names (`compression` in its query or form, else Content-Encoding); 'none' when it names none we know. */
export function selectCompression(query: string | null, form: string | null, contentEncoding: string | null): Compression {
  const hint = (query || form || contentEncoding || '').trim().toLowerCase();
  return COMPRESSION_ALIASES[hint] ?? 'none';
}

interface Decoded {
  text: string;
  compression: Compression;
  /** The UTF-8 `text` was decoded from, when it is exactly that (no BOM stripped). */
  bytes?: Uint8Array;
}

/** Decode UTF-8, keeping the bytes when they are exactly the text's encoding. */
function textOf(bytes: Uint8Array, compression: Compression): Decoded {
  const text = decodeUtf8(bytes);
  return bytes[0] === 0xef ? { text, compression } : { text, compression, bytes };
}

const isGzip = (bytes: Uint8Array) => bytes[0] === 0x1f && bytes[1] === 0x8b;

function decompress(data: Uint8Array | string, compression: Compression, maxBytes: number): Decoded {
  switch (compression) {
    case 'gzip': {
      // The bytes win over the hint, as in PostHog's capture (which checks gzip's magic number):
      // posthog-js has been seen sending `?compression=gzip-js` with a form body of base64 JSON.
      const bytes = typeof data === 'string' ? decodeBase64OrNull(data) : data;
      if (bytes && isGzip(bytes)) return textOf(gunzipCapped(bytes, maxBytes), compression);
      return typeof data === 'string' ? decodeText(data, maxBytes) : decodeBytes(data, maxBytes);
    }
    case 'lz64':
      return { text: decompressLz64Text(typeof data === 'string' ? data : decodeUtf8(data), maxBytes), compression };
    case 'base64':
      return { text: decodeBase64Payload(typeof data === 'string' ? data : decodeUtf8(data), maxBytes).text, compression };
    case 'none':
      return typeof data === 'string' ? decodeText(data, maxBytes) : decodeBytes(data, maxBytes);
  }
}

/** Bytes with no hint: gzip by magic number, else UTF-8 text (which may still be base64). */
function decodeBytes(bytes: Uint8Array, maxBytes: number): Decoded {
  if (isGzip(bytes)) return textOf(gunzipCapped(bytes, maxBytes), 'gzip');
  const plain = textOf(bytes, 'none');
  const decoded = decodeText(plain.text, maxBytes);
  return decoded.text === plain.text ? plain : decoded;
}

/** Text with no hint: JSON as it is; text in the base64 alphabet is decoded once (GET `?data=` of old snippets). */
function decodeText(text: string, maxBytes: number): Decoded {
  const start = text.trimStart()[0];
  const plain = { text, compression: 'none' as const };
  if (start === undefined || start === '{' || start === '[' || start === '"') return plain;
  if (!/^[A-Za-z0-9+/=_\- %\r\n]+$/.test(text)) return plain;
  try {
    return { text: decodeBase64Payload(text, maxBytes).text, compression: 'base64' };
  } catch (error) {
    // Only a guess: if it was not base64 after all, report the body as the JSON it should have been.
    if (error instanceof AppError && error.kind === 'invalid_payload') return plain;
    throw error;
  }
}

/** After base64: gzip by magic number, else UTF-8 JSON text; never base64 a second time. */
function decodeBase64Payload(text: string, maxBytes: number): Decoded {
  const bytes = decodeBase64(text);
  if (isGzip(bytes)) return { text: decodeUtf8(gunzipCapped(bytes, maxBytes)), compression: 'gzip' };
  return { text: decodeUtf8(bytes), compression: 'base64' };
}

function gunzipCapped(bytes: Uint8Array, maxBytes: number): Uint8Array {
  try {
    // `maxOutputLength` makes zlib stop once the output passes the cap: a bomb costs the cap, not its size.
    return gunzipSync(bytes, { maxOutputLength: Math.max(1, maxBytes) });
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' || error instanceof RangeError) tooLarge(maxBytes);
    throw malformed(`Failed to decompress data. ${(error as Error).message}`);
  }
}

function decompressLz64Text(text: string, maxBytes: number): string {
  // Form decoding turned the `+` of the base64 alphabet into spaces.
  const result = decompressLz64(text.trim().replace(/ /g, '+'), maxBytes, () => tooLarge(maxBytes));
  if (!result) throw malformed('Failed to decompress data.');
  return result;
}

/** Base64 as clients really send it: `+` turned into spaces, padding cut, url-safe alphabet, a `data=` prefix. */
function decodeBase64(text: string): Uint8Array {
  let cleaned = text.trim();
  if (cleaned.startsWith('data=')) cleaned = cleaned.slice('data='.length);
  if (cleaned.includes('%')) cleaned = safeDecodeUri(cleaned);
  cleaned = cleaned.replace(/ /g, '+').replace(/[\r\n\t]/g, '').replace(/=+$/, '');
  if (!/^[A-Za-z0-9+/_-]*$/.test(cleaned) || cleaned.length % 4 === 1) throw malformed('Failed to decode base64 data.');
  return new Uint8Array(Buffer.from(cleaned, 'base64'));
}

function decodeBase64OrNull(text: string): Uint8Array | null {
  try {
    return decodeBase64(text);
  } catch {
    return null;
  }
}

function safeDecodeUri(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw malformed('Failed to decode base64 data.');
  }
}

function decodeUtf8(bytes: Uint8Array): string {
  if (!isUtf8(bytes)) throw malformed('The payload is not valid UTF-8.');
  return utf8.decode(bytes);
}

/**
 * JSON as capture reads it; a 400 error when malformed. `NaN` and `Infinity` are not JSON and
 * are refused, as PostHog's Rust capture refuses them (serde): Django's json.loads took them,
 * but a value a client cannot send again as JSON is not stored as something else. Lone
 * surrogates become U+FFFD (`wellFormed`): PostHog's capture (serde_json) answers 400 for the
 * whole request instead; keeping the events is what our 200 promised.
 */
export function parseJson(text: string): unknown {
  let value: unknown;
  // Raw lone surrogates: text decoded from UTF-8 has none, lz64's UTF-16 may.
  if (!text.isWellFormed()) text = text.toWellFormed();
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw malformed(`Invalid JSON: ${(error as Error).message}`);
  }
  return mayHoldLoneSurrogates(text) ? wellFormed(value) : value;
}

function readHints(query: URLSearchParams, form: URLSearchParams | null): PayloadHints {
  const first = (...values: Array<string | null | undefined>) => values.find((v) => v !== null && v !== undefined && v !== '') ?? null;
  return {
    token: first(query.get('token'), query.get('api_key'), form?.get('api_key'), form?.get('token')),
    projectId: first(query.get('project_id'), form?.get('project_id')),
    sentAt: first(query.get('_'), form?.get('sent_at')),
  };
}
