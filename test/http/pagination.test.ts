import { describe, expect, test } from 'bun:test';
import { AppError } from '../../src/errors';
import { MAX_PAGE_SIZE, paginate, parsePage } from '../../src/http/pagination';

const URL_ = 'http://h.test/api/things/?b=2&a=1';

describe('pagination', () => {
  test.each([
    [{ limit: 10, offset: 0 }, 25, `http://h.test/api/things/?a=1&b=2&limit=10&offset=10`, null],
    [{ limit: 10, offset: 10 }, 25, `http://h.test/api/things/?a=1&b=2&limit=10&offset=20`, `http://h.test/api/things/?a=1&b=2&limit=10`],
    [{ limit: 10, offset: 20 }, 25, null, `http://h.test/api/things/?a=1&b=2&limit=10&offset=10`],
    [{ limit: 10, offset: 5 }, 25, `http://h.test/api/things/?a=1&b=2&limit=10&offset=15`, `http://h.test/api/things/?a=1&b=2&limit=10`],
    [{ limit: 100, offset: 0 }, 0, null, null],
  ])('page %j of %i items', (page, count, next, previous) => {
    expect(paginate(URL_, page, count, ['x'])).toEqual({ count, next, previous, results: ['x'] });
  });

  test('defaults to 100 and clamps to the documented maximum', () => {
    expect(parsePage({})).toEqual({ limit: 100, offset: 0 });
    expect(parsePage({ limit: '5000', offset: '3' })).toEqual({ limit: MAX_PAGE_SIZE, offset: 3 });
  });

  test.each([[{ limit: '0' }, 'limit'], [{ limit: 'x' }, 'limit'], [{ offset: '-1' }, 'offset']])('%j is a 400 naming %s', (q, attr) => {
    expect(() => parsePage(q)).toThrow(AppError);
    try {
      parsePage(q);
    } catch (e) {
      expect((e as AppError).attr).toBe(attr);
    }
  });
});
