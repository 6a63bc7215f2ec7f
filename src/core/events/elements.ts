/**
 * Parsing an event's `elements_chain` (see `core/ingest/elements-chain.ts` for the format) back
 * into PostHog's element objects, as `ClickhouseEventSerializer.get_elements` returns them:
 * order 0 is the clicked element, then its ancestors.
 *
 * PostHog parses with three regular expressions; this is the same grammar as linear scans,
 * because the chain is copied verbatim from a property the sender controls and a backtracking
 * regex over it could be made slow. Quirks kept on purpose so clients see PostHog's output:
 * - outside quotes, whitespace separates elements like `;` does;
 * - values are returned as written (`\"` stays escaped);
 * - a value is the shortest run, at least one character long, whose closing quote is not
 *   preceded by a backslash, so `a=""b="c"` reads as key `a`, value `"b=`;
 * - a chain longer than 16 KiB is cut at its last `;` (the outermost ancestors go first).
 * Deviation: a non-numeric nth-child/nth-of-type is null (PostHog's `int()` would fail the request).
 */
export interface ElementObject {
  event: null;
  text: string | null;
  tag_name: string | null;
  attr_class: string[] | null;
  href: string | null;
  attr_id: string | null;
  nth_child: number | null;
  nth_of_type: number | null;
  attributes: Record<string, string>;
  order: number;
}

export const MAX_ELEMENTS_CHAIN_LENGTH = 16_384;

export function parseElementsChain(chain: string | null | undefined): ElementObject[] {
  if (!chain) return [];
  return splitChain(truncate(chain)).map(parseElement);
}

function truncate(chain: string): string {
  if (chain.length <= MAX_ELEMENTS_CHAIN_LENGTH) return chain;
  const cut = chain.slice(0, MAX_ELEMENTS_CHAIN_LENGTH);
  const separator = cut.lastIndexOf(';');
  // A separator near the start means one huge element follows: keep the raw window instead.
  return separator > MAX_ELEMENTS_CHAIN_LENGTH / 2 ? cut.slice(0, separator) : cut;
}

const isSpace = (c: string) => /\s/.test(c);

/**
 * PostHog's `(?:[^\s;"]|"(?:[^"\\]|\\.|\\(?=\n))*\\?")+`, found left to right: runs of ordinary
 * characters and quoted strings. An unterminated quote closes at its last `\"` if it has one (the
 * regex's backtracking); otherwise it ends the element and is skipped.
 */
export function splitChain(chain: string): string[] {
  const out: string[] = [];
  let i = 0;
  let start = -1;
  const n = chain.length;
  const flush = (end: number) => {
    if (start >= 0 && end > start) out.push(chain.slice(start, end));
    start = -1;
  };
  while (i < n) {
    const c = chain[i] as string;
    if (c === '"') {
      const close = closingQuote(chain, i);
      if (close < 0) {
        flush(i);
        i++;
        continue;
      }
      if (start < 0) start = i;
      i = close + 1;
    } else if (c === ';' || isSpace(c)) {
      flush(i);
      i++;
    } else {
      if (start < 0) start = i;
      i++;
    }
  }
  flush(n);
  return out;
}

/** Index of the quote closing the string opened at `open`, or -1. */
function closingQuote(s: string, open: number): number {
  let lastEscapedQuote = -1;
  let j = open + 1;
  while (j < s.length) {
    const c = s[j];
    if (c === '"') return j;
    if (c === '\\' && j + 1 < s.length && s[j + 1] !== '\n') {
      if (s[j + 1] === '"') lastEscapedQuote = j + 1;
      j += 2;
    } else j++;
  }
  return lastEscapedQuote;
}

const ATTRIBUTE_START = /[a-zA-Z\-_0-9]*=/y;

const startsAttribute = (text: string, at: number): boolean => {
  ATTRIBUTE_START.lastIndex = at;
  return ATTRIBUTE_START.test(text);
};

function parseElement(text: string, order: number): ElementObject {
  const element: ElementObject = {
    event: null,
    text: null,
    tag_name: null,
    attr_class: null,
    href: null,
    attr_id: null,
    nth_child: null,
    nth_of_type: null,
    attributes: {},
    order,
  };
  // Tag and classes end at the first `:` that starts an attribute (classes may contain `:`).
  let colon = text.indexOf(':');
  while (colon >= 0 && !startsAttribute(text, colon + 1)) colon = text.indexOf(':', colon + 1);
  const tagPart = colon < 0 ? text : text.slice(0, colon);
  if (tagPart) {
    const dot = tagPart.indexOf('.');
    element.tag_name = dot < 0 ? tagPart : tagPart.slice(0, dot);
    if (dot >= 0) element.attr_class = tagPart.slice(dot + 1).split('.').filter((c) => c !== '');
  }
  if (colon >= 0) {
    for (const [key, value] of iterAttributes(text.slice(colon + 1))) setAttribute(element, key, value);
  }
  return element;
}

function setAttribute(element: ElementObject, key: string, value: string): void {
  if (key === 'href') element.href = value;
  else if (key === 'nth-child') element.nth_child = toInt(value);
  else if (key === 'nth-of-type') element.nth_of_type = toInt(value);
  else if (key === 'text') element.text = value;
  else if (key === 'attr_id') element.attr_id = value;
  else if (key) element.attributes[key] = value;
}

const toInt = (value: string): number | null => {
  const trimmed = value.trim();
  if (!/^[-+]?\d{1,15}$/.test(trimmed)) return null;
  return Number(trimmed);
};

/** Each `key="value"` pair, left to right, in one pass (PostHog's `iter_attributes`). */
export function* iterAttributes(source: string): Generator<[string, string]> {
  let keyStart = 0;
  let search = 0;
  for (;;) {
    const equals = source.indexOf('="', search);
    if (equals < 0) return;
    const end = valueEnd(source, equals + 2);
    if (end < 0) {
      search = equals + 2;
      continue;
    }
    yield [source.slice(keyStart, equals), source.slice(equals + 2, end)];
    keyStart = search = end + 1;
  }
}

/** `(.*?[^\\])"` anchored at `from`: the index of the closing quote, or -1. */
function valueEnd(s: string, from: number): number {
  for (let j = from + 1; j < s.length; j++) {
    if (s[j] === '"' && s[j - 1] !== '\\') return j;
    // `.` stops at a newline; only the last character of the value (`[^\\]`) may be one.
    if (s[j - 1] === '\n') return -1;
  }
  return -1;
}
