/**
 * Whether JSON text nests arrays and objects deeper than `max`, read without parsing: brackets
 * outside strings are counted (strings are skipped with `indexOf`, most of a payload's bytes
 * being string content), so it stops at the first level past `max`, however deep the rest goes.
 * Malformed text is left to the parser: this only answers for the depth.
 *
 * Checked before parsing because a parse that succeeds is not the end of it: every later step
 * that walks the value (`JSON.stringify` of the properties, messages between threads) recurses
 * once per level, and at 100,000 levels one of them overflowed its stack most of a second later,
 * in the parser thread, as a 500.
 */
/**
 * The deepest nesting accepted in a request's JSON (capture, flags, the private API), its
 * envelope included. PostHog's Rust capture (serde) refuses what nests deeper than 128 too;
 * events nest a handful of levels.
 */
export const MAX_JSON_DEPTH = 128;

export function exceedsJsonDepth(text: string, max: number): boolean {
  // Nesting past `max` takes at least max + 1 openings and as many closings: a shorter text (every
  // usual capture body) needs no scan.
  if (text.length < 2 * (max + 1) || openingsAtMost(text, max)) return false;
  let depth = 0;
  for (let i = 0, n = text.length; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = closingQuote(text, i);
      if (i < 0) return false;
    } else if (c === OPEN_SQUARE || c === OPEN_CURLY) {
      if (++depth > max) return true;
    } else if (c === CLOSE_SQUARE || c === CLOSE_CURLY) depth--;
  }
  return false;
}

/**
 * Whether the text has at most `max` brackets that open (in strings or not): then it cannot
 * nest deeper. Found with `indexOf`, which skips the rest: a single event's body has a handful,
 * and is not scanned character by character.
 */
function openingsAtMost(text: string, max: number): boolean {
  let n = 0;
  for (let i = text.indexOf('{'); i !== -1; i = text.indexOf('{', i + 1)) if (++n > max) return false;
  for (let i = text.indexOf('['); i !== -1; i = text.indexOf('[', i + 1)) if (++n > max) return false;
  return true;
}

/** The index of the quote closing the string opened at `open` (one not escaped), or -1. */
function closingQuote(text: string, open: number): number {
  let at = text.indexOf('"', open + 1);
  while (at > 0 && text.charCodeAt(at - 1) === BACKSLASH) {
    let backslashes = 1;
    while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) break;
    at = text.indexOf('"', at + 1);
  }
  return at;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_SQUARE = 0x5b;
const CLOSE_SQUARE = 0x5d;
const OPEN_CURLY = 0x7b;
const CLOSE_CURLY = 0x7d;
