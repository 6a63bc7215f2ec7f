import { observe, type Histogram } from '../../../core/metrics/histogram';
import { queryTimeout, type Dialect, type SqlFragment } from '../../../core/query';
import type { Row } from '../../db';
import type { EventReads, PropertyKeysQuery, ReadFeature } from './reads';
import type { EventsRelation, TimeRange } from './relation';
import type { RelationOptions } from '../types';

/**
 * How a request's statements run on the events' engine (EventReads: DuckDB or ClickHouse): every statement under the time
 * limit (the store gives its engine's errors as API errors, naming `attr`). A statement past its time
 * limit is answered with 504 at once; aborting its signal makes the store interrupt it on its
 * connection, so it stops using the CPU and the reader too.
 *
 * One runner serves one request: its statements wait once, together, for the project's
 * just-acknowledged events (at most the store's bound), then read what is loaded. Each statement
 * waiting on its own would, under a sustained load, add one bound per statement.
 */
export interface QueryRunnerOptions {
  store: () => EventReads;
  timeoutMs: number;
  /** Where each statement's duration (to its last row, its error or its abandonment) is counted. */
  querySeconds?: Histogram;
}

export class QueryRunner {
  /** Per team, the request's one wait for its just-acknowledged events. */
  private readonly visible = new Map<number, Promise<void>>();

  constructor(private readonly options: QueryRunnerOptions) {}

  /** The dialect every statement this runner runs is compiled for. */
  get dialect(): Dialect {
    return this.options.store().dialect;
  }

  /** The columns that order events by time exactly (see EventReads.timeColumns). */
  get timeColumns(): readonly string[] {
    return this.options.store().timeColumns;
  }

  /** An instant as the values of `timeColumns`. */
  timeKey(ms: number): SqlFragment[] {
    return this.options.store().timeKey(ms);
  }

  /** The relation with each event's person joined. */
  withPersons(eventsSql: string, teamId: number): string {
    return this.options.store().joinPersons(eventsSql, teamId);
  }

  /** One project's persons as a relation. */
  persons(teamId: number, options?: { distinctIds?: boolean }): string {
    return this.options.store().personsRelation(teamId, options);
  }

  /** Occurrences of a property's values (see EventReads.propertyValueNames). */
  propertyValueNames(relation: string, scope: SqlFragment, key: string, scanLimit: number): SqlFragment {
    return this.options.store().propertyValueNames(relation, scope, key, scanLimit);
  }

  /** Whether the engine writes results into files here (see EventReads.writesFiles). */
  get writesFiles(): boolean {
    return this.options.store().writesFiles;
  }

  /** A row's time bucket of `widthMs` in epoch ms (see EventReads.timeBucket). */
  timeBucket(widthMs: number): SqlFragment {
    if (!Number.isSafeInteger(widthMs) || widthMs < 1) throw new Error('a bucket width must be a positive integer');
    return this.options.store().timeBucket(widthMs);
  }

  /** The property keys of a relation's rows (see EventReads.propertyKeys). */
  propertyKeys(relation: string, scope: SqlFragment, limit: number): PropertyKeysQuery {
    return this.options.store().propertyKeys(relation, scope, limit);
  }

  /** Throws a 400 when the engine cannot answer `feature` yet. */
  requireFeature(feature: ReadFeature): void {
    this.options.store().requireFeature(feature);
  }

  private awaitVisible(teamId: number): Promise<void> {
    let wait = this.visible.get(teamId);
    if (!wait) {
      wait = this.options.store().awaitVisible(teamId);
      this.visible.set(teamId, wait);
    }
    return wait;
  }

  async relation(teamId: number, range?: TimeRange, options?: RelationOptions): Promise<EventsRelation> {
    await this.awaitVisible(teamId);
    return this.options.store().eventsRelation(teamId, range, { ...options, wait: false });
  }

  /** The team's rows in `range` as a relation already newest first, or null (see EventStore.newestFirstRelation). */
  async newestFirst(teamId: number, range: TimeRange): Promise<string | null> {
    await this.awaitVisible(teamId);
    return this.options.store().newestFirstRelation(teamId, range, { wait: false });
  }

  /** All rows of a statement (callers bound the row count with LIMIT). */
  async rows(statement: SqlFragment, attr: string | null = null): Promise<Row[]> {
    const out: Row[] = [];
    for await (const chunk of this.stream(statement, attr)) for (const row of chunk) out.push(row);
    return out;
  }

  /** The rows in chunks; each chunk must arrive within the time limit. */
  stream(statement: SqlFragment, attr: string | null = null): AsyncIterableIterator<Row[]> {
    const controller = new AbortController();
    const started = performance.now();
    let timed = false;
    const finished = () => {
      if (timed || !this.options.querySeconds) return;
      timed = true;
      observe(this.options.querySeconds, (performance.now() - started) / 1000);
    };
    const inner = this.options.store().streamQuery(statement.sql, statement.params, { signal: controller.signal, attr });
    const timeoutMs = this.options.timeoutMs;
    const stop = () => {
      controller.abort();
      inner.return?.().catch(() => undefined);
    };
    const iterator: AsyncIterableIterator<Row[]> = {
      async next() {
        const pending = inner.next();
        let timer: ReturnType<typeof setTimeout> | undefined;
        const late = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(queryTimeout(timeoutMs)), timeoutMs);
        });
        try {
          const result = await Promise.race([pending, late]);
          if (result.done) finished();
          return result;
        } catch (error) {
          pending.catch(() => undefined);
          finished();
          stop();
          throw error;
        } finally {
          clearTimeout(timer);
        }
      },
      async return() {
        finished();
        stop();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]() {
        return iterator;
      },
    };
    return iterator;
  }
}

