import { invalidInput } from './limits';

/**
 * A UTC instant with microsecond precision. JS dates stop at milliseconds, but the `before`
 * cursor in the events list's `next` link carries microseconds (`…53.829294+00:00`); truncating
 * it would drop the events between .829000 and .829294 from the next page.
 */
export interface Instant {
  /** Epoch milliseconds (integer). */
  ms: number;
  /** Microseconds beyond `ms`, 0–999. */
  us: number;
  /** The text was a bare date (`2024-01-31`). */
  dateOnly: boolean;
}

const ISO = /^(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{2})(?::(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?)?(Z|z|[+\- ]\d{2}(?::?\d{2})?)?$/;
const RELATIVE = /^-?(\d{1,9})?([hdwmMqy])(Start|End)?$/;
const MIN_MS = utcMs(1, 0, 1, 0, 0, 0, 0);
const MAX_MS = utcMs(9999, 11, 31, 23, 59, 59, 999);

/**
 * ISO 8601 as dateutil's `isoparse` reads it (`2024-01-31`, `2024-01-31T10:00`,
 * `2024-01-31 10:00:00.123456+02:00`, …). No offset means UTC (the project timezone here).
 */
export function parseIsoInstant(text: string): Instant | null {
  const m = ISO.exec(text.trim());
  if (!m) return null;
  const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i] ?? 0)) as number[];
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month - 1)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  const fraction = (m[7] ?? '').padEnd(6, '0').slice(0, 6);
  const offset = parseOffset(m[8]);
  if (offset === null) return null;
  const ms = utcMs(year, month - 1, day, hour, minute, second, Number(fraction.slice(0, 3))) - offset * 60_000;
  if (ms < MIN_MS || ms > MAX_MS) return null;
  return { ms, us: Number(fraction.slice(3)), dateOnly: m[4] === undefined };
}

/** Minutes east of UTC. A space stands for `+`: an unencoded `+` in a query string arrives as one. */
function parseOffset(text: string | undefined): number | null {
  if (!text || text === 'Z' || text === 'z') return 0;
  const digits = text.slice(1).replace(':', '');
  const hours = Number(digits.slice(0, 2));
  const minutes = Number(digits.slice(2) || '0');
  if (hours > 23 || minutes > 59) return null;
  return (text[0] === '-' ? -1 : 1) * (hours * 60 + minutes);
}

/**
 * PostHog's relative dates (`relative_date_parse`): `-7d`, `-24h`, `-1w`, `-3m` (months), `-30M`
 * (minutes), `-1q` (13 weeks), `-1y`, with `Start`/`End` snapping (`-1dStart`, `mEnd`). All mean
 * "that long before now"; the sign is optional. Month and year steps clamp to the month's last day.
 */
export function parseRelativeInstant(text: string, now: Date): Instant | null {
  const m = RELATIVE.exec(text.trim());
  if (!m) return null;
  const n = Number(m[1] ?? 0);
  const kind = m[2] as string;
  const position = m[3] as 'Start' | 'End' | undefined;
  const t = { y: now.getUTCFullYear(), mo: now.getUTCMonth(), d: now.getUTCDate(), h: now.getUTCHours(), mi: now.getUTCMinutes(), s: now.getUTCSeconds(), ms: now.getUTCMilliseconds(), us: 0 };
  let years = 0;
  let months = 0;
  let minutesBack = 0;
  if (kind === 'y') years = n;
  else if (kind === 'm') months = n;
  else minutesBack = n * ({ h: 60, d: 1_440, w: 10_080, M: 1, q: 131_040 } as Record<string, number>)[kind]!;
  snap(t, kind, position);
  const monthIndex = t.y * 12 + t.mo - years * 12 - months;
  t.y = Math.floor(monthIndex / 12);
  t.mo = monthIndex - t.y * 12;
  if (t.y < 1) return null;
  t.d = Math.min(t.d, daysInMonth(t.y, t.mo));
  const ms = utcMs(t.y, t.mo, t.d, t.h, t.mi, t.s, t.ms) - minutesBack * 60_000;
  if (ms < MIN_MS || ms > MAX_MS) return null;
  return { ms, us: t.us, dateOnly: false };
}

/** The absolute fields `get_delta_mapping_for` sets for `Start`/`End` (quirks included). */
function snap(t: Record<'y' | 'mo' | 'd' | 'h' | 'mi' | 's' | 'ms' | 'us', number>, kind: string, position?: 'Start' | 'End'): void {
  if (!position) return;
  const start = position === 'Start';
  if (kind === 'h' || kind === 'd') {
    if (kind === 'd') t.h = start ? 0 : 23;
    t.mi = start ? 0 : 59;
    t.s = start ? 0 : 59;
    t.ms = start ? 0 : 999;
    t.us = start ? 0 : 999;
  } else if (kind === 'm') {
    t.d = start ? 1 : 31;
  } else if (kind === 'y') {
    if (start) t.mo = 0;
    t.d = start ? 1 : 31;
  }
}

/**
 * `after`/`before` and date filter values: ISO 8601 or a relative date, resolved against `now`.
 * Returns the instant as DuckDB TIMESTAMP text in UTC, `YYYY-MM-DD HH:MM:SS.ffffff`, for binding.
 */
export function parseRelativeOrIsoDate(value: string, now: Date, attr: string): string {
  const instant = typeof value === 'string' ? (parseIsoInstant(value) ?? parseRelativeInstant(value, now)) : null;
  if (!instant) {
    throw invalidInput(`Invalid date '${String(value).slice(0, 100)}': use ISO 8601 or a relative date such as -7d, -24h or -1m`, attr);
  }
  return formatInstant(instant);
}

export function formatInstant(instant: Instant): string {
  const iso = new Date(instant.ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)}${String(instant.us).padStart(3, '0')}`;
}

export const formatDate = (instant: Instant): string => new Date(instant.ms).toISOString().slice(0, 10);

export const instantFromDate = (date: Date): Instant => ({ ms: date.getTime(), us: 0, dateOnly: false });

function utcMs(y: number, mo: number, d: number, h: number, mi: number, s: number, ms: number): number {
  // Date.UTC maps years 0–99 to 1900–1999; setUTCFullYear does not.
  const date = new Date(0);
  date.setUTCFullYear(y, mo, d);
  date.setUTCHours(h, mi, s, ms);
  return date.getTime();
}

function daysInMonth(year: number, monthIndex: number): number {
  return new Date(utcMs(year, monthIndex + 1, 0, 0, 0, 0, 0)).getUTCDate();
}
