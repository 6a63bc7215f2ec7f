/**
 * Event time, as PostHog's ingestion computes it (plugin-server `timestamps.ts`, Rust capture
 * `timestamp.rs`): the client's clock is trusted for differences only. With `sent_at`, the event
 * happened `sent_at - timestamp` before the server received it; `offset` (ms before sending,
 * legacy posthog-js) overrides that; more than 23 h in the future is clamped to the receive time;
 * a year outside 0–9999 becomes the epoch. All times are epoch milliseconds, UTC.
 */

const FUTURE_CUTOFF_MS = 23 * 3600 * 1000;
const MAX_DATE_MS = 8.64e15;

// Date-only, or date-time with optional seconds, fraction and zone; `T` or a space between.
const ISO_LIKE = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2})(?::(\d{2})(?:[.,](\d+))?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?)?$/i;
const EPOCH_DIGITS = /^\d+(?:\.\d+)?$/;
const EXPLICIT_ZONE = /(?:GMT|UTC|Z|[+-]\d{2}:?\d{2})\s*$/i;

/**
 * A client time value → epoch ms, or null when it is not a time. Strings without a zone are UTC
 * (never the server's local zone); digit strings are epoch seconds, or milliseconds past 11
 * digits (Django's rule for `_`); numbers are epoch milliseconds.
 */
export function parseTimestamp(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) && Math.abs(value) <= MAX_DATE_MS ? value : null;
  if (typeof value !== 'string') return null;
  const canonical = parseCanonical(value);
  if (canonical !== undefined) return canonical;
  const text = value.trim();
  if (EPOCH_DIGITS.test(text)) {
    const n = Number(text);
    return text.split('.')[0].length > 11 ? n : Math.round(n * 1000);
  }
  const iso = ISO_LIKE.exec(text);
  if (iso) return parseIso(iso);
  // Other formats (RFC 2822 and the like) only when they name their zone, so the result never
  // depends on the server's TZ.
  if (!EXPLICIT_ZONE.test(text)) return null;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? null : ms;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const digitAt = (text: string, i: number): number => {
  const d = text.charCodeAt(i) - 48;
  return d >= 0 && d <= 9 ? d : Number.NaN;
};
const twoDigits = (text: string, i: number): number => digitAt(text, i) * 10 + digitAt(text, i + 1);

/**
 * `YYYY-MM-DDTHH:MM:SS[.fraction]Z`, what SDKs send (`toISOString`), read digit by digit: the
 * general path's regex, string building and three Date parses cost an event many times more
 * (see bench/NOTES.md). Anything else, or an out-of-range field, is left to the general path
 * (undefined), so both always agree.
 */
function parseCanonical(t: string): number | undefined {
  const n = t.length;
  if (n < 20 || t.charCodeAt(n - 1) !== 90 || t.charCodeAt(4) !== 45 || t.charCodeAt(7) !== 45 || t.charCodeAt(10) !== 84 || t.charCodeAt(13) !== 58 || t.charCodeAt(16) !== 58) {
    return undefined;
  }
  let ms = 0;
  if (n > 20) {
    if (t.charCodeAt(19) !== 46 || n === 21) return undefined;
    // The first three fraction digits, truncated (as the general path reads them).
    for (let i = 20, scale = 100; i < n - 1; i++, scale /= 10) {
      const d = digitAt(t, i);
      if (Number.isNaN(d)) return undefined;
      if (scale >= 1) ms += d * scale;
    }
  }
  const year = twoDigits(t, 0) * 100 + twoDigits(t, 2);
  const month = twoDigits(t, 5);
  const day = twoDigits(t, 8);
  const hour = twoDigits(t, 11);
  const minute = twoDigits(t, 14);
  const second = twoDigits(t, 17);
  // NaN fails every comparison: a non-digit anywhere falls back too. Years below 100 as well
  // (Date.UTC would read them as 19xx).
  if (!(year >= 100 && month >= 1 && month <= 12 && day >= 1 && hour <= 23 && minute <= 59 && second <= 59)) return undefined;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (day > (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1])) return undefined;
  return Date.UTC(year, month - 1, day, hour, minute, second, ms);
}

function parseIso([, date, hourMinute, seconds, fraction, zone]: RegExpExecArray): number | null {
  const ms = (fraction ?? '').padEnd(3, '0').slice(0, 3);
  let offset = 'Z';
  if (zone && zone.toUpperCase() !== 'Z') {
    const digits = zone.slice(1).replace(':', '');
    offset = `${zone[0]}${digits.slice(0, 2)}:${digits.slice(2, 4).padEnd(2, '0')}`;
  }
  const normalized = `${date}T${hourMinute ?? '00:00'}:${seconds ?? '00'}.${ms}${offset}`;
  const parsed = Date.parse(normalized);
  if (Number.isNaN(parsed)) return null;
  // Some engines roll 2023-02-30 over to March; a calendar date that does not exist is not a time.
  const midnight = Date.parse(`${date}T00:00:00Z`);
  if (Number.isNaN(midnight) || new Date(midnight).toISOString().slice(0, 10) !== date) return null;
  return parsed;
}

export interface EventTimeFields {
  timestamp?: unknown;
  offset?: unknown;
  /** `properties.$ignore_sent_at`: the client asks not to correct its clock. */
  ignoreSentAt?: boolean;
}

/** The stored time of an event received at `now`, in a request sent at `sentAt` (both epoch ms). */
export function resolveEventTime(fields: EventTimeFields, now: number, sentAt: number | null): number {
  let result = now;
  const timestamp = parseTimestamp(fields.timestamp);
  const clientSentAt = fields.ignoreSentAt ? null : sentAt;
  if (timestamp !== null) result = clientSentAt !== null ? now + (timestamp - clientSentAt) : timestamp;
  if (typeof fields.offset === 'number' && Number.isInteger(fields.offset)) result = now - fields.offset;

  if (result - now > FUTURE_CUTOFF_MS) result = now;
  if (!isWithinYears0To9999(result)) result = 0;
  // Whole milliseconds, as stored: a client's fractional time (a number, or epoch digits with a
  // fraction) otherwise reached the uuid (uuidv7 refused it: the request was dead-lettered after
  // its 200) and the day its row's property keys are filed under.
  return Math.round(result);
}

/** 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z. */
const YEAR_0_MS = -62_167_219_200_000;
const YEAR_9999_END_MS = 253_402_300_799_999;

function isWithinYears0To9999(ms: number): boolean {
  return ms >= YEAR_0_MS && ms <= YEAR_9999_END_MS;
}
