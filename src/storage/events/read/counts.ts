import { bind, isEmptySql, joinSql, sql, trusted, type SqlFragment } from '../../../core/query';
import type { RelationFile } from './relation';
import type { QueryRunner } from './runner';
import { allOf } from './list-statements';

/** What a count reads: the project, the request's runner, and the counts remembered across requests. */
export interface CountContext {
  runner: QueryRunner;
  teamId: number;
  counts: FileCounts;
}

/** The listing's conditions: with the time bounds (`where`) and without them (`conditions`); `person` when they read person columns. */
export interface CountScope {
  where: SqlFragment;
  conditions: SqlFragment;
  person: boolean;
  /** The listing keeps only these distinct ids (see RelationOptions.distinctIds). */
  distinctIds?: readonly string[];
}

/** The listing's exclusive time bounds (epoch ms). */
export interface CountBounds {
  afterMs: number | null;
  beforeMs: number;
}

const asEvents = (relation: string) => `${relation} AS events`;

/**
 * Counts of a listing's conditions per Parquet file. A file never changes once it is part of the
 * events relation (compaction and merges write new ones under new ids), so a count taken once
 * stays exact for the file's life: the next page of a listing, or the same filter asked again,
 * reads only the rows that arrived since. Bounded; the oldest entries go first.
 */
export class FileCounts {
  private readonly memo = new Map<string, number>();

  constructor(private readonly maxEntries = 50_000) {}

  get(fileId: string, conditions: string): number | undefined {
    return this.memo.get(`${fileId}\n${conditions}`);
  }

  set(fileId: string, conditions: string, n: number): void {
    if (this.memo.size >= this.maxEntries) this.memo.delete(this.memo.keys().next().value as string);
    this.memo.set(`${fileId}\n${conditions}`, n);
  }
}

/** A fragment as a memo key: its SQL and its bound values (never a person join: those rows change). */
const conditionsKey = (f: SqlFragment): string => `${f.sql}\n${JSON.stringify(f.params, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`;

/**
 * A file whose every row lies inside the listing's exclusive bounds, with a millisecond to spare
 * on either side (the manifest keeps milliseconds; a bound may carry microseconds), so the bounds
 * hold for each of its rows and the file can be counted without them.
 */
const insideBounds = (f: RelationFile, req: CountBounds): boolean => (req.afterMs === null || f.minTs > req.afterMs) && f.maxTs < req.beforeMs - 1;

/**
 * The listing's total. Files wholly inside the bounds are counted from the manifest when nothing
 * but the bounds filters them, and otherwise once per file and condition (FileCounts); only the
 * hot rows and the files a bound cuts through are scanned with the full conditions every time.
 * Person-property conditions read the persons tables, which change: those are always scanned.
 */
export async function countListing(ctx: CountContext, scope: CountScope, req: CountBounds): Promise<number> {
  if (ctx.runner.dialect.name !== 'duckdb') return countScanned(ctx, scope, req);
  const relation = await ctx.runner.relation(ctx.teamId, { ...(req.afterMs === null ? {} : { from: req.afterMs }), to: req.beforeMs });
  const filtered = !isEmptySql(scope.conditions);
  const key = filtered && !scope.person ? conditionsKey(scope.conditions) : null;
  let total = 0;
  const unknown: string[] = [];
  const scanned: string[] = [];
  for (const f of relation.files) {
    if (!insideBounds(f, req) || (filtered && key === null)) scanned.push(f.id);
    else if (!filtered) total += f.rows;
    else {
      const n = ctx.counts.get(f.id, key as string);
      if (n === undefined) unknown.push(f.id);
      else total += n;
    }
  }
  const team = sql`team_id = ${bind(ctx.teamId)}`;
  const rest = (async () => {
    const from = asEvents(scope.person ? ctx.runner.withPersons(relation.parts(scanned, true), ctx.teamId) : relation.parts(scanned, true));
    const [row] = await ctx.runner.rows(sql`SELECT count(team_id) AS count FROM ${trusted(from)} WHERE ${allOf(team, scope.where)}`, 'properties');
    return Number(row?.count ?? 0);
  })();
  const perFile = (async () => {
    if (unknown.length === 0) return 0;
    const from = asEvents(relation.parts(unknown, false));
    const rows = await ctx.runner.rows(
      sql`SELECT _file, count(team_id) AS count FROM ${trusted(from)} WHERE ${allOf(team, scope.conditions)} GROUP BY _file`,
      'properties',
    );
    const counts = new Map(rows.map((r) => [String(r._file), Number(r.count)]));
    let n = 0;
    for (const id of unknown) {
      const c = counts.get(id) ?? 0;
      ctx.counts.set(id, key as string, c);
      n += c;
    }
    return n;
  })();
  rest.catch(() => undefined);
  perFile.catch(() => undefined);
  return total + (await rest) + (await perFile);
}

/**
 * The listing's total as one `count()` over the bounds, for engines without per-file manifests
 * (ClickHouse: its primary key narrows the scan to the team and the time range, and a count
 * reads no other column than the conditions').
 */
async function countScanned(ctx: CountContext, scope: CountScope, req: CountBounds): Promise<number> {
  const range = { ...(req.afterMs === null ? {} : { from: req.afterMs }), to: req.beforeMs };
  const relation = (await ctx.runner.relation(ctx.teamId, range, scope.distinctIds ? { distinctIds: scope.distinctIds } : {})).sql;
  const from = asEvents(scope.person ? ctx.runner.withPersons(relation, ctx.teamId) : relation);
  const team = sql`team_id = ${ctx.runner.dialect.bind(ctx.teamId)}`;
  const [row] = await ctx.runner.rows(sql`SELECT count() AS count FROM ${trusted(from)} WHERE ${allOf(team, scope.where)}`, 'properties');
  return Number(row?.count ?? 0);
}
