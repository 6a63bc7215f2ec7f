/**
 * Dates for the is_date_before / is_date_after / is_date_exact operators, read the way the flags
 * service reads them. Naive values (no offset) are taken as UTC: PostHog reads them in the team's
 * time zone, which for most projects (and for every project here so far) is UTC.
 */

const RELATIVE_DATE = /^-?(\d+)([hdwmy])$/;
const OFFSET_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)? ?([Zz]|[+-]\d{2}:?\d{2})$/;
const NAIVE_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?$/;
const DATE_ONLY = /^(\d{4})-(\d{1,2})-(\d{1,2})$/;
const NUMERIC_TEXT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

const countDaysInMonth = (year: number, monthIndex: number): number =>
  new Date(Date.UTC(year, monthIndex + 1, 0)).getUTCDate();

/** Months and years step back one at a time and clamp the day at each step, as the service does. */
const stepBackMonths = (from: Date, months: number, monthsPerStep: number): Date => {
  const date = new Date(from.getTime());
  for (let step = 0; step < months; step++) {
    const year = date.getUTCFullYear();
    const target = date.getUTCMonth() - monthsPerStep;
    const targetYear = year + Math.floor(target / 12);
    const targetMonth = ((target % 12) + 12) % 12;
    const day = Math.min(date.getUTCDate(), countDaysInMonth(targetYear, targetMonth));
    date.setUTCFullYear(targetYear, targetMonth, day);
  }
  return date;
};

/** `-7d`, `7d`, `-2w`, `-1m`, `-1y`, `-12h`: that long before `now` (the sign is ignored). */
export const parseRelativeDate = (text: string, now: Date): Date | null => {
  const match = RELATIVE_DATE.exec(text);
  if (!match) return null;
  const amount = Number(match[1]);
  if (amount >= 10_000) return null;
  switch (match[2]) {
    case 'h':
      return new Date(now.getTime() - amount * HOUR_MS);
    case 'd':
      return new Date(now.getTime() - amount * DAY_MS);
    case 'w':
      return new Date(now.getTime() - amount * 7 * DAY_MS);
    case 'm':
      return stepBackMonths(now, amount, 1);
    default:
      return stepBackMonths(now, amount, 12);
  }
};

const parseOffsetMillis = (offset: string): number => {
  if (offset.toUpperCase() === 'Z') return 0;
  const digits = offset.slice(1).replace(':', '');
  const minutes = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2));
  return (offset.startsWith('-') ? -1 : 1) * minutes * 60_000;
};

/** Calendar-checked: 2024-02-30 or 25:00 is not a date rather than a rolled-over one. */
const buildUtcDate = (parts: Array<string | undefined>, offset = 'Z'): Date | null => {
  const [year, month, day, hour = 0, minute = 0, second = 0] = parts.slice(0, 6).map((part) => Number(part ?? 0));
  const millis = Math.round(Number(`0${parts[6] ?? ''}`) * 1000);
  if (hour > 23 || minute > 59 || second > 59) return null;
  const utc = Date.UTC(year, month - 1, day, hour, minute, second);
  const check = new Date(utc);
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day) return null;
  return new Date(utc + millis - parseOffsetMillis(offset));
};

/** Relative forms first, then RFC 3339 with an offset, then naive dates and date-times. */
export const parseDateText = (text: string, now: Date): Date | null => {
  const relative = parseRelativeDate(text, now);
  if (relative) return relative;
  const withOffset = OFFSET_DATE_TIME.exec(text);
  if (withOffset) return buildUtcDate(withOffset.slice(1, 8), withOffset[8]);
  const naive = NAIVE_DATE_TIME.exec(text);
  if (naive) return buildUtcDate(naive.slice(1, 8));
  const dateOnly = DATE_ONLY.exec(text);
  return dateOnly ? buildUtcDate(dateOnly.slice(1, 4)) : null;
};

const dateFromEpochSeconds = (seconds: number): Date | null =>
  Number.isFinite(seconds) ? new Date(Math.round(seconds * 1000)) : null;

/** A person's value: epoch seconds (number or numeric text) or a date text; anything else is no date. */
export const parsePropertyDate = (value: unknown, now: Date): Date | null => {
  if (typeof value === 'number') return dateFromEpochSeconds(value);
  if (typeof value !== 'string') return null;
  if (NUMERIC_TEXT.test(value)) return dateFromEpochSeconds(Number(value));
  return parseDateText(value, now);
};

/** A filter's value must be text; a number or boolean filter value never matches. */
export const parseFilterDate = (value: unknown, now: Date): Date | null =>
  typeof value === 'string' ? parseDateText(value, now) : null;
