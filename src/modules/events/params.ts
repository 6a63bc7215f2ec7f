import { formatInstant, parseExpressionList, parseIsoInstant, parseListOrder, parseRelativeOrIsoDate, type EventFilterParams } from '../../core/query';
import { AppError } from '../../errors';
import type { EventKey, Order } from '../../storage/events/read/list-statements';

/** The list endpoint's query string, as Elysia hands it over (repeatable ones may be arrays). */
export interface ListQueryInput {
  event?: string;
  distinct_id?: string;
  person_id?: string;
  after?: string;
  before?: string;
  properties?: string;
  limit?: string;
  offset?: string;
  format?: string;
  select?: string | string[];
  where?: string | string[];
  orderBy?: string;
  cursor?: string;
  action_id?: string;
}

export const EXPORT_FORMATS = ['csv', 'json', 'ndjson', 'parquet'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export interface ListRequest {
  /** null: the JSON envelope; otherwise a streamed export. */
  format: ExportFormat | null;
  /** Rows wanted; null for an export without `limit` (every matching event). */
  limit: number | null;
  offset: number;
  order: Order;
  select: string[];
  where: string[];
  /** `orderBy` of a select query: select entries, each optionally prefixed with `-`. */
  selectOrder: string[] | null;
  cursor: EventKey | null;
  filters: EventFilterParams;
  /** Exclusive time bounds as epoch ms (the upper one always set: `before`, else now + 5 s). */
  afterMs: number | null;
  beforeMs: number;
  /** The effective upper bound as ISO 8601 UTC, frozen into `next` links when `before` was not given. */
  beforeIso: string;
  beforeGiven: boolean;
  actionId: string | null;
}

/** PostHog's list sizes: 100 by default, at most 1,000 a page; deep offsets are refused. */
export const LIST_DEFAULT_LIMIT = 100;
export const LIST_MAX_LIMIT = 1_000;
export const MAX_OFFSET = 50_000;
/** PostHog hides events stamped in the future: the default upper bound is now + 5 s. */
const DEFAULT_BEFORE_MS = 5_000;

const invalid = (detail: string, attr: string) => new AppError('invalid_input', detail, attr);

function integerParam(value: string | undefined, attr: string, min: number): number | null {
  if (value === undefined || value === '') return null;
  if (!/^\s*\d{1,15}\s*$/.test(value) || Number(value) < min) throw invalid('A valid integer is required.', attr);
  return Number(value);
}

/** `YYYY-MM-DD HH:MM:SS.ffffff` (UTC) → epoch ms, dropping the microseconds. */
const textToMs = (text: string): number => Date.parse(`${text.slice(0, 23).replace(' ', 'T')}Z`);
const textToIso = (text: string): string => `${text.replace(' ', 'T')}Z`;

export function parseListRequest(query: ListQueryInput, now: Date, maxRows: number): ListRequest {
  const format = parseFormat(query.format);
  const select = parseExpressionList(query.select, 'select');
  const where = parseExpressionList(query.where, 'where');
  if (where.length && !select.length) throw invalid("Cannot use 'where' without 'select'", 'where');
  const requested = integerParam(query.limit, 'limit', 1);
  const limit = format
    ? requested
    : select.length
      ? Math.min(requested ?? LIST_DEFAULT_LIMIT, maxRows)
      : Math.min(requested ?? LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT);
  const offset = integerParam(query.offset, 'offset', 0) ?? 0;
  const maxOffset = select.length ? maxRows : MAX_OFFSET;
  if (offset > maxOffset) throw invalid(`Offset must be at most ${maxOffset}; follow the next link to page further.`, 'offset');
  const filters: EventFilterParams = {
    event: query.event,
    distinct_id: query.distinct_id,
    properties: query.properties,
    after: query.after,
    before: query.before,
  };
  const beforeText = query.before
    ? parseRelativeOrIsoDate(query.before, now, 'before')
    : formatInstant({ ms: now.getTime() + DEFAULT_BEFORE_MS, us: 0, dateOnly: false });
  const afterText = query.after ? parseRelativeOrIsoDate(query.after, now, 'after') : null;
  if (!query.before) filters.before = textToIso(beforeText);
  return {
    format,
    limit,
    offset,
    order: select.length ? 'DESC' : parseListOrder(query.orderBy),
    select,
    where,
    selectOrder: select.length && query.orderBy ? parseSelectOrder(query.orderBy) : null,
    cursor: parseCursor(query.cursor),
    filters,
    afterMs: afterText ? textToMs(afterText) : null,
    beforeMs: textToMs(beforeText) + 1,
    beforeIso: textToIso(beforeText),
    beforeGiven: !!query.before,
    actionId: query.action_id || null,
  };
}

/** `format`: one of `choices` (the list: every export format; one event: csv or json). */
export function parseFormat<F extends ExportFormat>(value: string | undefined, choices: readonly F[] = EXPORT_FORMATS as readonly ExportFormat[] as readonly F[]): F | null {
  if (value === undefined || value === '') return null;
  if ((choices as readonly string[]).includes(value)) return value as F;
  const names = choices.length > 2 ? `${choices.slice(0, -1).join(', ')} or ${choices[choices.length - 1]}` : choices.join(' or ');
  throw new AppError('invalid_choice', `"${value.slice(0, 50)}" is not a valid choice: use ${names}.`, 'format');
}

function parseSelectOrder(value: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    parsed = null;
  }
  if (!Array.isArray(parsed) || parsed.length === 0 || parsed.some((v) => typeof v !== 'string')) {
    throw invalid('orderBy must be a JSON list of select entries, each optionally prefixed with -', 'orderBy');
  }
  return parsed as string[];
}

/** The keyset cursor of a `next` link: `<ISO timestamp>,<uuid>` of the last row shown. */
export function formatCursor(key: EventKey): string {
  return `${new Date(key.ms).toISOString()},${key.uuid}`;
}

function parseCursor(value: string | undefined): EventKey | null {
  if (!value) return null;
  const comma = value.indexOf(',');
  const instant = comma > 0 ? parseIsoInstant(value.slice(0, comma)) : null;
  const uuid = comma > 0 ? value.slice(comma + 1) : '';
  if (!instant || !uuid || uuid.length > 100) throw invalid('Invalid cursor: follow the next link as given.', 'cursor');
  return { ms: instant.ms, uuid };
}

/** The keys PostHog's serializer keeps of a person's properties. */
export const PERSON_PROPERTY_SUBSET = ['email', 'name', 'username'] as const;

