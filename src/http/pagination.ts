import { AppError } from '../errors';

export const DEFAULT_PAGE_SIZE = 100;
/** The largest `limit` any list accepts; larger values are clamped. */
export const MAX_PAGE_SIZE = 1000;

export interface Page {
  limit: number;
  offset: number;
}

export function parsePage(query: { limit?: unknown; offset?: unknown }): Page {
  const limit = query.limit === undefined || query.limit === '' ? DEFAULT_PAGE_SIZE : Number(query.limit);
  const offset = query.offset === undefined || query.offset === '' ? 0 : Number(query.offset);
  if (!Number.isInteger(limit) || limit < 1) throw new AppError('invalid_input', 'A valid integer is required.', 'limit');
  if (!Number.isInteger(offset) || offset < 0) throw new AppError('invalid_input', 'A valid integer is required.', 'offset');
  return { limit: Math.min(limit, MAX_PAGE_SIZE), offset };
}

/** DRF's LimitOffsetPagination: absolute links keeping the other parameters, sorted by name. */
export function paginate<T>(requestUrl: string, page: Page, count: number, results: T[]) {
  const url = new URL(requestUrl);
  const link = (offset: number | null) => {
    const params = new URLSearchParams(url.search);
    params.set('limit', String(page.limit));
    if (offset === null) params.delete('offset');
    else params.set('offset', String(offset));
    params.sort();
    return `${url.origin}${url.pathname}?${params.toString()}`;
  };
  const next = page.offset + page.limit < count ? link(page.offset + page.limit) : null;
  const previous = page.offset <= 0 ? null : page.offset - page.limit <= 0 ? link(null) : link(page.offset - page.limit);
  return { count, next, previous, results };
}
