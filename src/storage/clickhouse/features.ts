/**
 * What a ClickHouse server can do, from `SELECT version()`. This project targets modern
 * ClickHouse and keeps three switches for the 18.16 server Debian ships: on 18.16 there is no
 * `DateTime64` (a `DateTime` holds the seconds and a column of its own the milliseconds), no
 * `JSONExtract*` (`visitParamExtract*` reads a top-level key), and no server-side query
 * parameters (values are written into the statement as escaped literals).
 */
export interface ClickHouseFeatures {
  dateTime64: boolean;
  jsonExtract: boolean;
  queryParams: boolean;
}

/**
 * Servers from this major version on get the modern spellings. DateTime64 came last of the three
 * (20.1), with its functions over the next releases; only 18.16 and 26.x are tested.
 */
const MODERN_MAJOR = 21;

export function featuresOf(version: string): ClickHouseFeatures {
  const major = Number(/^(\d+)\./.exec(version)?.[1] ?? NaN);
  const modern = !Number.isFinite(major) || major >= MODERN_MAJOR;
  return { dateTime64: modern, jsonExtract: modern, queryParams: modern };
}
