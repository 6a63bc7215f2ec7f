import { DuckDBInstance } from '@duckdb/node-api';
const inst = await DuckDBInstance.create(':memory:');
const c = await inst.connect();
const f = '/tmp/bf/r4k/2026-11-12.parquet';
const keys = (await c.runAndReadAll(`SELECT DISTINCT unnest(json_keys(properties)) k FROM read_parquet('${f}') ORDER BY k`)).getRowsJS().map(r => r[0] as string);
const paths = keys.map(k => `'/${k}'`).join(', ');
let s = performance.now();
await c.run(`COPY (SELECT distinct_id, elements_chain, event, uuid, ${keys.map((_, i) => `p[${i+1}]`).join(', ')}, strftime(timestamp, '%Y-%m-%dT%H:%M:%S.%f+00:00') FROM (SELECT *, json_extract_string(properties, [${paths}]) p FROM read_parquet('${f}') LIMIT 100000)) TO '/tmp/bf/s.csv' (FORMAT csv, HEADER false, NEW_LINE '\r\n')`);
console.log('duckdb', performance.now() - s);
const buf = Buffer.from(await Bun.file('/tmp/bf/s.csv').arrayBuffer());
console.log('bytes', buf.length);
const QUOTE = 34, COMMA = 44, LF = 10;
/** End (exclusive) of the field starting at `at`, i.e. index of the following ',' or '\r'. */
function fieldEnd(b: Buffer, at: number): number {
  if (b[at] === QUOTE) {
    let i = at + 1;
    for (;;) {
      const q = b.indexOf(QUOTE, i);
      if (b[q + 1] === QUOTE) { i = q + 2; continue; }
      return q + 1;
    }
  }
  const comma = b.indexOf(COMMA, at);
  const cr = b.indexOf(13, at);
  return comma < 0 || (cr >= 0 && cr < comma) ? cr : comma;
}
function recordEnd(b: Buffer, at: number): number {
  // next LF not inside quotes
  let i = at;
  for (;;) {
    const lf = b.indexOf(LF, i);
    const q = b.indexOf(QUOTE, i);
    if (q < 0 || lf < q) return lf + 1;
    // skip quoted section
    let j = q + 1;
    for (;;) { const q2 = b.indexOf(QUOTE, j); if (b[q2 + 1] === QUOTE) { j = q2 + 2; continue; } i = q2 + 1; break; }
  }
}
const people = new Map<string, Buffer>();
const none = Buffer.from(',,,,,');
for (let rep = 0; rep < 5; rep++) {
  s = performance.now();
  const out = Buffer.allocUnsafe(buf.length + 100000 * 64);
  let o = 0, at = 0, rows = 0;
  while (at < buf.length) {
    const e1 = fieldEnd(buf, at);
    const did = buf[at] === QUOTE ? buf.toString('utf8', at + 1, e1 - 1).replaceAll('""', '"') : buf.toString('utf8', at, e1);
    const e2 = fieldEnd(buf, e1 + 1), e3 = fieldEnd(buf, e2 + 1), e4 = fieldEnd(buf, e3 + 1);
    const end = recordEnd(buf, e4);
    let p = people.get(did);
    if (!p) { p = rows % 2 ? none : Buffer.from(`,${did},true,${did}@x.com,,`); people.set(did, p); }
    o += buf.copy(out, o, at, e4);
    o += p.copy(out, o);
    o += buf.copy(out, o, e4, end);
    at = end; rows++;
  }
  console.log('js', (performance.now() - s).toFixed(1), 'ms', rows, 'rows', o);
}
