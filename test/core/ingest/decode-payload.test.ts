import { describe, expect, test } from 'bun:test';
import { gzipSync } from 'node:zlib';
import * as LZString from 'lz-string';
import { MB, bytes, decode, gzipBombOfZeros, lz64BombOfA, thrown } from './helpers';
import { parseJson } from '../../../src/core/ingest/decode-payload';

const EVENT = { event: 'my-event', properties: { distinct_id: 'u1', prop: '💻 Writing code' } };
const BATCH = { api_key: 'phc_T', batch: [{ type: 'capture', event: 'user signed up', distinct_id: '2' }] };
const json = (value: unknown) => JSON.stringify(value);
const b64 = (value: Uint8Array | string) => Buffer.from(value).toString('base64');
const gz = (value: unknown) => new Uint8Array(gzipSync(json(value)));
const form = 'application/x-www-form-urlencoded';

// PostHog test_base64_decode_variations: the form value of `data`, and the same with `+` as spaces.
const POSTHOG_BASE64 = 'eyJldmVudCI6IiRwYWdldmlldyIsInByb3BlcnRpZXMiOnsiZGlzdGluY3RfaWQiOiJlZWVlZWVlZ8+lZWVlZWUifX0=';
const POSTHOG_BASE64_EVENT = { event: '$pageview', properties: { distinct_id: 'eeeeeeegϥeeeee' } };
// PostHog test_incorrect_padding: GET ?data= with the `=` padding cut off.
const UNPADDED = 'eyJldmVudCI6IndoYXRldmVmciIsInByb3BlcnRpZXMiOnsidG9rZW4iOiJ0b2tlbjEyMyIsImRpc3RpbmN0X2lkIjoiYXNkZiJ9fQ';

describe('decodePayload: every way clients encode a body', () => {
  test.each([
    ['plain JSON', json(BATCH), { contentType: 'application/json' }, BATCH, 'none'],
    ['JSON with a UTF-8 BOM', `\uFEFF${json(BATCH)}`, { contentType: 'application/json' }, BATCH, 'none'],
    ['gzip by Content-Encoding (posthog-node 5)', gz(BATCH), { contentType: 'application/json', contentEncoding: 'gzip' }, BATCH, 'gzip'],
    ['gzip by ?compression=gzip', gz(BATCH), { contentType: 'application/json', query: 'compression=gzip' }, BATCH, 'gzip'],
    ['gzip-js as text/plain', gz(EVENT), { contentType: 'text/plain', query: 'compression=gzip-js' }, EVENT, 'gzip'],
    ['gzip-js with no content type', gz(EVENT), { query: 'compression=gzip-js' }, EVENT, 'gzip'],
    ['gzip by magic bytes, nothing says so (posthog-js 1.449)', gz(EVENT), { contentType: 'text/plain' }, EVENT, 'gzip'],
    ['gzip hinted, JSON sent: the bytes win', json(EVENT), { contentEncoding: 'gzip' }, EVENT, 'none'],
    ['gzip-js hinted, a base64 form body sent (posthog-js seen doing so): the bytes win', `data=${encodeURIComponent(b64(json(BATCH)))}`, { contentType: form, query: 'compression=gzip-js' }, BATCH, 'base64'],
    ['gzip-js hinted, base64 of gzip in a form', `data=${encodeURIComponent(b64(gz(EVENT)))}`, { contentType: form, query: 'compression=gzip-js' }, EVENT, 'gzip'],
    ['lz64 by Content-Encoding (PostHog test_batch_lzstring)', LZString.compressToBase64(json({ ...BATCH, e: '🤓' })), { contentType: 'application/json', contentEncoding: 'lz64' }, { ...BATCH, e: '🤓' }, 'lz64'],
    ['lz64 by ?compression=lz64', LZString.compressToBase64(json(EVENT)), { query: 'compression=lz64' }, EVENT, 'lz64'],
    ['lz-string alias', LZString.compressToBase64(json(EVENT)), { query: 'compression=lz-string' }, EVENT, 'lz64'],
    ['lz64 form with compression field', `data=${encodeURIComponent(LZString.compressToBase64(json(EVENT)))}&compression=lz64`, { contentType: form }, EVENT, 'lz64'],
    ['lz64 form whose + became spaces', `data=${LZString.compressToBase64(json(EVENT)).replace(/\+/g, '%20')}&compression=lz64`, { contentType: form }, EVENT, 'lz64'],
    ['base64 form field', `data=${encodeURIComponent(POSTHOG_BASE64)}&api_key=phc_T`, { contentType: form }, POSTHOG_BASE64_EVENT, 'base64'],
    ['base64 form field with + sent as spaces', `data=${POSTHOG_BASE64.replace(/\+/g, ' ')}&api_key=phc_T`, { contentType: form }, POSTHOG_BASE64_EVENT, 'base64'],
    ['?compression=base64 form (posthog-js sendBeacon)', `data=${encodeURIComponent(b64(json(BATCH)))}`, { contentType: form, query: 'compression=base64' }, BATCH, 'base64'],
    ['form with raw JSON in data', `data=${encodeURIComponent(json(EVENT))}`, { contentType: form }, EVENT, 'none'],
    ['form content type over a raw JSON body (curl -d)', json(EVENT), { contentType: form }, EVENT, 'none'],
    ['text/plain body starting with data=', `data=${encodeURIComponent(b64(json(EVENT)))}`, { contentType: 'text/plain' }, EVENT, 'base64'],
    ['GET ?data= with URL-encoded JSON', '', { query: `data=${encodeURIComponent(json(EVENT))}` }, EVENT, 'none'],
    ['GET ?data= with unpadded base64 (PostHog test_incorrect_padding)', '', { query: `data=${UNPADDED}` }, { event: 'whatevefr', properties: { token: 'token123', distinct_id: 'asdf' } }, 'base64'],
    ['url-safe base64 body', b64(json({ ...EVENT, q: '??>>' })).replace(/\+/g, '-').replace(/\//g, '_'), { contentType: 'text/plain' }, { ...EVENT, q: '??>>' }, 'base64'],
    ['base64 of a gzip body', b64(gz(EVENT)), { query: 'compression=base64' }, EVENT, 'base64'],
    ['base64 of a gzip body, no hint', b64(gz(EVENT)), { contentType: 'text/plain' }, EVENT, 'base64'],
    ['base64 body with no hint (Rust auto-detection)', b64(json(EVENT)), {}, EVENT, 'base64'],
    ['"NaN" and "Infinity" in strings are text', '{"event":"e","properties":{"c":"NaN","d":["Infinity"]}}', {}, { event: 'e', properties: { c: 'NaN', d: ['Infinity'] } }, 'none'],
  ] as const)('%s', (_name, body, options, payload, compression) => {
    const decoded = decode(body, options);
    expect({ payload: decoded.payload, compression: decoded.compression }).toEqual({ payload, compression });
  });

  test.each([
    ['nothing outside the body', '', {}, { token: null, projectId: null, sentAt: null }],
    ['query token, then api_key', '', { query: 'token=phc_q&api_key=phc_other&_=1714979289100' }, { token: 'phc_q', projectId: null, sentAt: '1714979289100' }],
    ['query api_key', '', { query: 'api_key=phc_q&project_id=7' }, { token: 'phc_q', projectId: '7', sentAt: null }],
    ['form api_key, then token', 'api_key=phc_f&token=phc_other&project_id=9&sent_at=2024-01-01T00:00:00Z', { contentType: form }, { token: 'phc_f', projectId: '9', sentAt: '2024-01-01T00:00:00Z' }],
    ['query before form', 'api_key=phc_f', { contentType: form, query: 'token=phc_q' }, { token: 'phc_q', projectId: null, sentAt: null }],
  ] as const)('hints: %s', (_name, formBody, options, hints) => {
    const body = formBody === '' ? json(EVENT) : `${formBody}&data=${encodeURIComponent(json(EVENT))}`;
    expect(decode(body, options).hints).toEqual(hints);
  });

  test('a large gzip under the cap decodes whole', () => {
    const big = { event: 'big', properties: { distinct_id: 'u', blob: 'x'.repeat(5 * MB) } };
    expect(decode(gz(big), { maxBytes: 6 * MB }).payload).toEqual(big);
  });
});

describe('decodePayload: malformed input is a 400 invalid_payload', () => {
  const invalid = (detail: string) => ({ kind: 'invalid_payload', status: 400, detail, attr: null });
  const NO_DATA = 'No data found. Make sure to use a POST request when sending the payload in the body of the request.';
  test.each([
    ['truncated gzip (PostHog test_invalid_gzip)', new Uint8Array(Buffer.from('1f8b0800000000000003', 'hex')), { contentType: 'text/plain', query: 'compression=gzip' }, 'Malformed request data: Failed to decompress data. unexpected end of file'],
    ['half a gzip stream, detected by magic', gz(EVENT).subarray(0, 20), {}, 'Malformed request data: Failed to decompress data. unexpected end of file'],
    ['gzip-js body "undefined" (the bytes are read as they are: not JSON)', 'undefined', { query: 'compression=gzip-js' }, 'Malformed request data: Invalid JSON: JSON Parse error: Unexpected identifier "undefined"'],
    ['invalid lz64 (PostHog test_invalid_lz64)', 'foo', { query: 'compression=lz64' }, 'Malformed request data: Failed to decompress data.'],
    ['lz64 with characters outside its alphabet', 'N4Ig!!!!', { query: 'compression=lz64' }, 'Malformed request data: Failed to decompress data.'],
    ['truncated lz64', LZString.compressToBase64(json(EVENT)).slice(0, 20), { query: 'compression=lz64' }, 'Malformed request data: Failed to decompress data.'],
    ['base64 with characters outside its alphabet', 'data=eyJ!!!', { contentType: form, query: 'compression=base64' }, 'Malformed request data: Failed to decode base64 data.'],
    ['base64 of impossible length', 'data=eyJhY', { contentType: form, query: 'compression=base64' }, 'Malformed request data: Failed to decode base64 data.'],
    ['JSON with a trailing comma (PostHog test_incorrect_json)', '{"event": "incorrect json with trailing comma",}', { contentType: 'application/json' }, 'Malformed request data: Invalid JSON: JSON Parse error: Property name must be a string literal'],
    ['neither JSON nor base64', 'hello', { contentType: 'application/json' }, 'Malformed request data: Invalid JSON: JSON Parse error: Unexpected identifier "hello"'],
    ['cut-off JSON', '{"event":"e"', { contentType: 'application/json' }, "Malformed request data: Invalid JSON: JSON Parse error: Expected '}'"],
    ['a NaN literal (not JSON; PostHog\'s Rust capture refuses it)', '{"event":"e","properties":{"a":NaN}}', { contentType: 'application/json' }, 'Malformed request data: Invalid JSON: JSON Parse error: Unexpected identifier "NaN"'],
    ['an Infinity literal', '{"event":"e","properties":{"b":Infinity}}', { contentType: 'application/json' }, 'Malformed request data: Invalid JSON: JSON Parse error: Unexpected identifier "Infinity"'],
    ['invalid UTF-8 in a raw body', new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), { contentType: 'application/json' }, 'Malformed request data: The payload is not valid UTF-8.'],
    ['invalid UTF-8 inside gzip', new Uint8Array(gzipSync(Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x7d]))), {}, 'Malformed request data: The payload is not valid UTF-8.'],
    ['invalid UTF-8 inside base64', `data=${encodeURIComponent(b64(new Uint8Array([0x7b, 0xed, 0xa0, 0x80, 0x7d])))}`, { contentType: form, query: 'compression=base64' }, 'Malformed request data: The payload is not valid UTF-8.'],
    ['empty body (PostHog test_empty_request_returns_an_error)', '', { contentType: 'application/json' }, NO_DATA],
    ['GET ?data= with nothing in it', '', { query: 'data=' }, NO_DATA],
    ['whitespace only', ' \n ', { contentType: 'application/json' }, NO_DATA],
    ['gzip of nothing', new Uint8Array(gzipSync('')), {}, NO_DATA],
  ] as const)('%s', (_name, body, options, detail) => {
    expect(thrown(() => decode(body, options))).toEqual(invalid(detail));
  });
});

describe('decodePayload: the output cap is a 413, reached fast and with flat memory', () => {
  const tooLarge = (maxBytes: number) => ({
    kind: 'payload_too_large',
    status: 413,
    detail: `Request too large: the decoded payload is over ${maxBytes} bytes.`,
    attr: null,
  });

  function timed(run: () => unknown): { result: unknown; ms: number; rssGrowthMb: number } {
    Bun.gc(true);
    const rss = process.memoryUsage().rss;
    const start = performance.now();
    const result = thrown(run);
    return { result, ms: performance.now() - start, rssGrowthMb: (process.memoryUsage().rss - rss) / MB };
  }

  test('a 1 MB gzip that inflates to 1 GB', () => {
    const bomb = gzipBombOfZeros(1024);
    expect(bomb.byteLength).toBeLessThan(1.1 * MB);
    const { result, ms, rssGrowthMb } = timed(() => decode(bomb, { contentType: 'text/plain', maxBytes: 20 * MB }));
    expect(result).toEqual(tooLarge(20 * MB));
    expect(ms).toBeLessThan(500);
    expect(rssGrowthMb).toBeLessThan(200);
  });

  test('the same bomb declared by Content-Encoding, and as 1024 concatenated gzip members', () => {
    const one = new Uint8Array(gzipSync(new Uint8Array(MB), { level: 9 }));
    const members = new Uint8Array(Buffer.concat(Array<Uint8Array>(1024).fill(one)));
    expect(timed(() => decode(gzipBombOfZeros(1024), { contentEncoding: 'gzip', maxBytes: 2 * MB })).result).toEqual(tooLarge(2 * MB));
    const { result, ms } = timed(() => decode(members, { maxBytes: 2 * MB }));
    expect(result).toEqual(tooLarge(2 * MB));
    expect(ms).toBeLessThan(500);
  });

  test('a 110 KB lz64 stream that expands to 1 G characters', () => {
    const bomb = lz64BombOfA(46_341);
    expect(bomb.length).toBeLessThan(115_000);
    const { result, ms, rssGrowthMb } = timed(() => decode(bomb, { query: 'compression=lz64', maxBytes: 20 * MB }));
    expect(result).toEqual(tooLarge(20 * MB));
    expect(ms).toBeLessThan(500);
    expect(rssGrowthMb).toBeLessThan(300);
  });

  test('a raw body over the cap is refused before any work', () => {
    expect(thrown(() => decode(new Uint8Array(1001), { maxBytes: 1000 }))).toEqual(tooLarge(1000));
  });

  test('base64 of a gzip bomb', () => {
    const body = `data=${encodeURIComponent(b64(gzipBombOfZeros(64)))}`;
    expect(thrown(() => decode(bytes(body), { contentType: form, maxBytes: 4 * MB }))).toEqual(tooLarge(4 * MB));
  });
});

describe('parseJson: lone surrogates become U+FFFD (UTF-8 and DuckDB JSON cannot hold them)', () => {
  test('in values, keys, arrays and nested objects; pairs, escaped backslashes and key order kept', () => {
    const text = '{"a":"x\\ud800y","k\\udc00":["\\udbff",1,{"d":"\\uDFFF"}],"pair":"\\ud83d\\ude00","slash":"\\\\ud800","__proto__":"\\ud800","z":null}';
    const parsed = parseJson(text) as Record<string, unknown>;
    expect(JSON.stringify(parsed)).toBe('{"a":"x\ufffdy","k\ufffd":["\ufffd",1,{"d":"\ufffd"}],"pair":"😀","slash":"\\\\ud800","__proto__":"\ufffd","z":null}');
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(Object.keys(parsed)).toEqual(['a', 'k\ufffd', 'pair', 'slash', '__proto__', 'z']);
  });

  test('text without such an escape is parsed as JSON.parse does', () => {
    const text = '{"a":"\\u00e9\\n","b":[1,2.5,true,null],"c":{"d":"😀"}}';
    expect(parseJson(text)).toEqual(JSON.parse(text));
  });
});
