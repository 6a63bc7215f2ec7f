/** Cohorts as the rest of the code sees them (no storage engine types). */

export interface Cohort {
  id: number;
  teamId: number;
  name: string | null;
  description: string;
  /** PostHog's legacy groups, as stored (a list). */
  groups: unknown[];
  filters: Record<string, unknown> | null;
  deleted: boolean;
  isStatic: boolean;
  isCalculating: boolean;
  createdBy: number | null;
  createdAt: Date;
  lastCalculation: Date | null;
  errorsCalculating: number;
  count: number | null;
  version: number;
  pendingVersion: number | null;
}

/** What a user defines of a cohort; the rest of a `Cohort` is its calculation's state. */
export type CohortDefinition = Pick<Cohort, 'id' | 'teamId' | 'name' | 'description' | 'groups' | 'filters' | 'deleted' | 'isStatic' | 'createdBy' | 'createdAt'>;
export type CohortState = Omit<Cohort, keyof CohortDefinition>;

export interface CohortInput {
  name?: string | null;
  description?: string;
  groups?: unknown[];
  filters?: Record<string, unknown> | null;
  deleted?: boolean;
  isStatic?: boolean;
}

/** A member as the persons listing shows it. */
export interface CohortPerson {
  id: number;
  uuid: string;
  properties: Record<string, unknown>;
  createdAt: Date;
  isIdentified: boolean;
  /** Sorted, at most 10 (as PostHog lists them). */
  distinctIds: string[];
}

/** What a static-cohort upload names persons by. */
export type PersonIdKind = 'person_id' | 'distinct_id' | 'email';

export interface Paging {
  limit: number;
  offset: number;
}

export interface CohortStore {
  /** Live (not deleted) cohorts of a project, newest first. */
  listCohorts(teamId: number, page: Paging): Promise<{ count: number; results: Cohort[] }>;
  /** A cohort of the project, deleted or not; null when it is not the project's. */
  getCohort(teamId: number, id: number): Promise<Cohort | null>;
  /** Dynamic cohorts start with `is_calculating` true; call `scheduleCalculation` after. */
  createCohort(teamId: number, input: CohortInput, createdBy: number | null, now: Date): Promise<Cohort>;
  /** A dynamic, live cohort is marked as calculating; call `scheduleCalculation` after. */
  updateCohort(teamId: number, id: number, patch: CohortInput): Promise<Cohort>;
  /** Add persons to a static cohort; returns how many of the ids named a person of the project. */
  addStaticPersons(teamId: number, id: number, kind: PersonIdKind, ids: string[], now: Date): Promise<number>;
  /** Remove one person from a static cohort; false when the person was not a member. */
  removeStaticPerson(teamId: number, id: number, personUuid: string, now: Date): Promise<boolean>;
  /**
   * Recompute a dynamic cohort's members in the background. Single-flight per cohort: a request
   * while one runs makes it run once more after. The promise settles when the cohort is idle;
   * failures are recorded on the cohort (`errors_calculating`), never thrown.
   */
  scheduleCalculation(cohortId: number, now: Date): Promise<void>;
  /** Settles when no calculation is running (shutdown, tests). */
  whenIdle(): Promise<void>;
  /** Members in person id order. */
  listCohortPersons(teamId: number, cohortId: number, page: Paging): Promise<{ count: number; results: CohortPerson[] }>;
  /** Every member, in batches (for exports that stream). */
  iterateCohortPersons(teamId: number, cohortId: number, batchSize?: number): AsyncIterable<CohortPerson[]>;
  /** The union of the members' property keys and their largest number of distinct ids. */
  cohortPersonsShape(teamId: number, cohortId: number): Promise<{ propertyKeys: string[]; maxDistinctIds: number }>;
  /** The live cohorts a person is currently a member of (feature flags use this). */
  cohortIdsForPerson(teamId: number, personUuid: string): Promise<Set<number>>;
  /** A deleted person leaves every cohort of the project (static or calculated); the counts follow. */
  removePerson(teamId: number, personUuid: string): Promise<void>;
  deleteTeam(teamId: number): Promise<void>;
}
