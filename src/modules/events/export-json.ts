import { parseElementsChain } from '../../core/events/elements';
import type { Row } from '../../storage/db';
import { isoTimestamp, type PersonObject } from './event-object';
import type { EventKey } from '../../storage/events/read/list-statements';
import type { Slice } from './export-plan';
import type { ListContext } from './list';

const encoder = new TextEncoder();

/** What the streamed results were, once they are: the envelope's tail is written from it. */
export interface StreamedPage {
  /** The last row sent (the `next` cursor). */
  last: EventKey | null;
  /** Rows matched past `max`: the page was cut, so `next` is given. */
  more: boolean;
}

/**
 * A JSON object streamed: `head` (the text up to and including `"results":[`), the results'
 * chunks, then the fields only known once they are sent (`tail`, an object's fields without
 * braces). `{"results":[…],"next":…,"count":…}` is the list's envelope as much as any order is,
 * and memory stays that of one chunk however many results there are.
 */
export async function* streamedEnvelope(head: string, results: AsyncGenerator<Uint8Array>, tail: () => Promise<Record<string, unknown>>): AsyncGenerator<Uint8Array> {
  yield encoder.encode(head);
  yield* results;
  const fields = await tail();
  const text = Object.entries(fields)
    .map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`)
    .join(',');
  yield encoder.encode(`]${text ? `,${text}` : ''}}`);
}

/** Results text gathered before it is sent: a DuckDB chunk of ~2,048 events of up to 1 MiB each is never one string. */
const JSON_CHUNK_CHARS = 1 << 20;
/** Characters each memo (persons' and elements' JSON) holds before it is emptied. */
const JSON_MEMO_CHARS = 8 << 20;

export interface JsonSliceOptions {
  /** Each object followed by a newline, no commas (NDJSON). */
  lines?: boolean;
  /** JSON_CHUNK_CHARS unless a test makes it small. */
  chunkChars?: number;
  /** JSON_MEMO_CHARS unless a test makes it small. */
  memoChars?: number;
}

/**
 * Event objects of the slices, comma-separated, at most `max` of them (null: all). One row more
 * than `max` is read, as the slices are planned, so meeting that row tells `page.more`; it is
 * not sent. A slice the plan reads under a LIMIT (see `Slice.limit`) is asked for the rows
 * still wanted (`cap`); counting here stops the others.
 */
export async function* jsonSlices(
  ctx: Pick<ListContext, 'personOf'>,
  slices: Iterable<Slice> | AsyncIterable<Slice>,
  max: number | null,
  readSlice: (slice: Slice, cap: number | null) => Promise<AsyncIterable<Row[]>>,
  page: StreamedPage,
  options: JsonSliceOptions = {},
): AsyncGenerator<Uint8Array> {
  const chunkChars = options.chunkChars ?? JSON_CHUNK_CHARS;
  const memoChars = options.memoChars ?? JSON_MEMO_CHARS;
  const personJson = boundedMemo(memoChars, (distinctId) => JSON.stringify(ctx.personOf(distinctId) satisfies PersonObject | null));
  const elementsJson = boundedMemo(memoChars, (chain) => JSON.stringify(parseElementsChain(chain)));
  let sent = 0;
  for await (const slice of slices) {
    const wanted = max === null ? null : max + 1 - sent;
    const cap = slice.limit === null ? null : wanted;
    for await (const rows of await readSlice(slice, cap)) {
      let text = '';
      for (const row of rows) {
        if (max !== null && sent >= max) {
          page.more = true;
          break;
        }
        const json = eventJson(row, personJson, elementsJson);
        text += options.lines ? `${json}\n` : (sent ? ',' : '') + json;
        sent++;
        page.last = { uuid: String(row.uuid), ms: (row.timestamp as Date).getTime() };
        if (text.length >= chunkChars) {
          yield encoder.encode(text);
          text = '';
        }
      }
      if (text) yield encoder.encode(text);
      if (page.more) return;
    }
  }
}

/**
 * `compute` memoized, the memo emptied whenever the text it holds (keys and values) would pass
 * `maxChars`; a value longer than that alone is not kept. A slice of events with large, rarely
 * repeated persons or elements chains would otherwise hold them all until the slice ends.
 */
export function boundedMemo(maxChars: number, compute: (key: string) => string): (key: string) => string {
  const memo = new Map<string, string>();
  let chars = 0;
  return (key) => {
    let value = memo.get(key);
    if (value !== undefined) return value;
    value = compute(key);
    const size = key.length + value.length;
    if (size > maxChars) return value;
    if (chars + size > maxChars) {
      memo.clear();
      chars = 0;
    }
    memo.set(key, value);
    chars += size;
    return value;
  };
}

/** An event object as JSON text, with the stored properties spliced in (they are JSON already). */
function eventJson(row: Row, personJson: (distinctId: string) => string, elementsJson: (chain: string) => string): string {
  const distinctId = String(row.distinct_id);
  const chain = typeof row.elements_chain === 'string' ? row.elements_chain : '';
  const properties = typeof row.properties === 'string' && row.properties ? row.properties : '{}';
  return (
    `{"id":${JSON.stringify(String(row.uuid))},"distinct_id":${JSON.stringify(distinctId)},"properties":${properties},` +
    `"event":${JSON.stringify(String(row.event))},"timestamp":"${isoTimestamp(row.timestamp as Date)}","person":${personJson(distinctId)},` +
    `"elements":${elementsJson(chain)},"elements_chain":${JSON.stringify(chain)}}`
  );
}
