import { describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * Only src/storage knows an engine: no SQL statement, table name, relation or engine error text
 * may appear in src/modules or src/core. src/core/query is the compiler (its dialects and
 * fragment module produce SQL by design) and is not scanned. Comments are stripped first: a
 * comment may say what storage does.
 */

const ROOT = join(import.meta.dir, '..', '..');

/** What gives a file away as knowing the engine. Case-sensitive: the codebase writes SQL keywords in capitals. */
const FORBIDDEN: ReadonlyArray<[string, RegExp]> = [
  ['a SELECT statement', /\bSELECT\s+[\w*(]/],
  ['an INSERT statement', /\bINSERT\s+INTO\b/],
  ['a DELETE statement', /\bDELETE\s+FROM\b/],
  ['an UPDATE statement', /\bUPDATE\s+\w+\s+SET\b/],
  ['a COPY statement', /\bCOPY\s*\(/],
  ['DDL', /\b(CREATE|ALTER|DROP)\s+(TABLE|VIEW|INDEX)\b/],
  ['a Parquet file read', /\b(read_parquet|parquet_scan)\b/],
  [
    'a storage table name',
    /\b(events_hot|person_distinct_ids|event_parquet_files|event_person_files|event_file_property_keys|event_store_state|event_query_usage|cohort_people|person_erasures|schema_migrations|feature_flag_hash_key_overrides)\b/,
  ],
  ['a table named in a statement', /\b(FROM|JOIN|INTO)\s+(persons|cohorts|projects|users|groups|feature_flags|organizations|memberships|events)\b/],
  ['an events relation or its files', /\.(withPersons|newestFirst|eventsRelation|personsRelation)\(|\brelation\.(sql|files|parts)\b|\brunner\.relation\(/],
  ['a statement run directly', /\brunner\.(rows|stream)\(|\bassembleEventsQuery\b/],
  ['engine error text', /\b(Binder|Catalog|Parser|Conversion|Invalid Input|Constraint|Out of Memory) Error\b|DB::Exception|@duckdb\/|@clickhouse\//],
];

/**
 * Files allowed to keep a hit, each with the reason. Keep this short: every entry is a debt or a
 * deliberate exception, not a way around the rule.
 */
const ALLOWED: Record<string, string> = {
  // HogQL is the API's own query language: these are examples in the endpoint's OpenAPI text.
  'src/modules/query/index.ts': 'HogQL example in the API description',
  'src/modules/query/model.ts': 'HogQL example in the API description',
};

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: false })
    .map(String)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f));
}

/** The code without its comments (line and block), string and template text kept. */
export function stripComments(code: string): string {
  let out = '';
  for (let i = 0; i < code.length; ) {
    const c = code[i]!;
    if (c === '/' && code[i + 1] === '/') {
      while (i < code.length && code[i] !== '\n') i++;
    } else if (c === '/' && code[i + 1] === '*') {
      const end = code.indexOf('*/', i + 2);
      const stop = end < 0 ? code.length : end + 2;
      out += code.slice(i, stop).replace(/[^\n]/g, ' ');
      i = stop;
    } else if (c === "'" || c === '"' || c === '`') {
      let j = i + 1;
      while (j < code.length && code[j] !== c) j += code[j] === '\\' ? 2 : 1;
      out += code.slice(i, j + 1);
      i = j + 1;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

export function findViolations(file: string, code: string): string[] {
  const lines = stripComments(code).split('\n');
  const found: string[] = [];
  lines.forEach((line, i) => {
    for (const [what, pattern] of FORBIDDEN) if (pattern.test(line)) found.push(`${file}:${i + 1}: ${what}: ${line.trim().slice(0, 120)}`);
  });
  return found;
}

const scanned = [...sourceFiles('src/modules'), ...sourceFiles('src/core').filter((f) => !f.startsWith(join('src', 'core', 'query')))];

describe('no SQL outside storage', () => {
  test('src/modules and src/core (but the query compiler) name no statement, table, relation or engine error', () => {
    const violations = scanned
      .map((f) => relative(ROOT, join(ROOT, f)))
      .filter((f) => !(f in ALLOWED))
      .flatMap((f) => findViolations(f, readFileSync(join(ROOT, f), 'utf8')));
    expect(violations).toEqual([]);
  });

  test('every allowed exception still has a hit (a stale entry is removed)', () => {
    const stale = Object.keys(ALLOWED).filter((f) => findViolations(f, readFileSync(join(ROOT, f), 'utf8')).length === 0);
    expect(stale).toEqual([]);
  });

  test.each([
    ['SELECT uuid FROM x', 1],
    ["sql`COPY (${q}) TO 'f'`", 1],
    ['FROM read_parquet([a])', 1],
    ['JOIN persons ON persons.uuid = pdi.person_uuid', 1],
    ['const rel = await ctx.runner.relation(teamId)', 1],
    ['// SELECT in a comment', 0],
    ['/** COPY (x) */ const a = 1;', 0],
    ["throw new Error('Binder Error: no column')", 1],
    ['const persons = listPersons(); // the persons', 0],
  ])('the scanner on %p finds %p', (line, n) => {
    expect(findViolations('x.ts', line).length).toBe(n);
  });
});
