import type { Row, SqlParam } from '../db';
import type { Cohort, CohortDefinition, CohortInput, CohortState } from './types';

/**
 * A cohort's row as either engine gives it back, and its input as columns: shared by the
 * DuckDB store, DuckDB's copies of definitions kept in PostgreSQL, and the PostgreSQL store.
 */

/** JSON as DuckDB gives it (text) or as PostgreSQL's `::text` does; null stays null. */
const parseJson = (value: unknown): unknown => (typeof value === 'string' ? JSON.parse(value) : (value ?? null));

export const toCohortDefinition = (r: Row): CohortDefinition => ({
  id: Number(r.id),
  teamId: Number(r.team_id),
  name: (r.name as string | null) ?? null,
  description: String(r.description ?? ''),
  groups: (parseJson(r.groups) as unknown[] | null) ?? [],
  filters: parseJson(r.filters) as Record<string, unknown> | null,
  deleted: Boolean(r.deleted),
  isStatic: Boolean(r.is_static),
  createdBy: r.created_by == null ? null : Number(r.created_by),
  createdAt: r.created_at as Date,
});

export const toCohortState = (r: Row): CohortState => ({
  isCalculating: Boolean(r.is_calculating),
  lastCalculation: (r.last_calculation as Date | null) ?? null,
  errorsCalculating: Number(r.errors_calculating),
  count: r.count == null ? null : Number(r.count),
  version: Number(r.version),
  pendingVersion: r.pending_version == null ? null : Number(r.pending_version),
});

export const toCohort = (r: Row): Cohort => ({ ...toCohortDefinition(r), ...toCohortState(r) });

/** Input field → column and how its value is stored (groups and filters as JSON text). */
const COLUMNS: Record<keyof CohortInput, [string, (value: unknown) => SqlParam]> = {
  name: ['name', (v) => (v ?? null) as SqlParam],
  description: ['description', (v) => String(v ?? '')],
  groups: ['groups', (v) => JSON.stringify(v ?? [])],
  filters: ['filters', (v) => (v == null ? null : JSON.stringify(v))],
  deleted: ['deleted', (v) => Boolean(v)],
  isStatic: ['is_static', (v) => Boolean(v)],
};

/** The columns an input sets (fields left undefined are not touched), with their values. */
export const cohortAssignments = (input: CohortInput) =>
  (Object.keys(COLUMNS) as Array<keyof CohortInput>)
    .filter((key) => input[key] !== undefined)
    .map((key) => ({ column: COLUMNS[key][0], value: COLUMNS[key][1](input[key]) }));
