import type { TimeInterval } from './types';

/**
 * Time arithmetic for cohort conditions, against a `now` that is always passed in. Months and
 * years are calendar steps with the day clamped (31 March minus one month is 28/29 February).
 */

const HOUR_MS = 3_600_000;

function minusMonths(from: Date, months: number): Date {
  const date = new Date(from.getTime());
  const target = date.getUTCMonth() - months;
  const year = date.getUTCFullYear() + Math.floor(target / 12);
  const month = ((target % 12) + 12) % 12;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  date.setUTCFullYear(year, month, Math.min(date.getUTCDate(), lastDay));
  return date;
}

/** The start of "the last `value` `interval`s" ending at `now`. */
export function windowStart(now: Date, value: number, interval: TimeInterval): Date {
  switch (interval) {
    case 'hour':
      return new Date(now.getTime() - value * HOUR_MS);
    case 'day':
      return new Date(now.getTime() - value * 24 * HOUR_MS);
    case 'week':
      return new Date(now.getTime() - value * 7 * 24 * HOUR_MS);
    case 'month':
      return minusMonths(now, value);
    case 'year':
      return minusMonths(now, value * 12);
  }
}

const RELATIVE = /^-?(\d{1,4})([hdwmy])$/;
const UNITS: Record<string, TimeInterval> = { h: 'hour', d: 'day', w: 'week', m: 'month', y: 'year' };
/** ISO date or date-time; without an offset it is read as UTC. */
const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?: ?(?:[Zz]|[+-]\d{2}:?\d{2}))?)?$/;

/**
 * A date filter's value: relative (`-7d`, `-2w`, `-1m`, `-1y`, `-12h`) or an ISO date; anything
 * else (numbers, booleans, free text) is no date, and the condition then matches nobody.
 */
export function parseFilterDate(value: unknown, now: Date): Date | null {
  if (typeof value !== 'string') return null;
  const text = value.trim();
  const relative = RELATIVE.exec(text);
  if (relative) return windowStart(now, Number(relative[1]), UNITS[relative[2]]);
  if (!ISO_DATE.test(text)) return null;
  const hasOffset = /(?:[Zz]|[+-]\d{2}:?\d{2})$/.test(text) && text.length > 10;
  const parsed = new Date(hasOffset ? text : `${text.length === 10 ? `${text}T00:00:00` : text.replace(' ', 'T')}Z`);
  return Number.isNaN(parsed.getTime()) ? null : parsed;
}

const NUMBER_TEXT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** A numeric filter value (number or numeric text); anything else is null. */
export function parseFilterNumber(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'string' && NUMBER_TEXT.test(value.trim())) return Number(value.trim());
  return null;
}
