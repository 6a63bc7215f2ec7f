/**
 * Persons and groups held in memory, and the pure reducer that applies `PersonOperation`s to them.
 * It is the reference meaning of each operation (storage must give the same result), the state
 * the tests run identify/alias sequences against, and a per-batch overlay: plan an event against
 * `lookupIn(state)`, apply its operations, plan the next one.
 */
import { MAX_GROUP_TYPES, setOwn, type PersonLookup, type PersonOperation, type PersonRecord } from './person-updates';

type Properties = Record<string, unknown>;

export interface StoredPerson extends PersonRecord {
  distinctIds: string[];
}

export interface PersonState {
  persons: Record<string, StoredPerson>;
  /** distinct_id → person id. */
  distinctIds: Record<string, string>;
  /** group type → group key → properties. */
  groups: Record<string, Record<string, Properties>>;
}

export const emptyPersonState = (): PersonState => ({ persons: {}, distinctIds: {}, groups: {} });

export function lookupIn(state: PersonState): PersonLookup {
  return {
    lookup(distinctId) {
      const personId = Object.hasOwn(state.distinctIds, distinctId) ? state.distinctIds[distinctId] : undefined;
      const person = personId === undefined ? undefined : state.persons[personId];
      if (!person) return null;
      const { distinctIds: _ids, ...record } = person;
      return record;
    },
  };
}

/** A new state; the given one is not changed. */
export function applyPersonOperations(state: PersonState, operations: PersonOperation[]): PersonState {
  const next: PersonState = { persons: { ...state.persons }, distinctIds: { ...state.distinctIds }, groups: { ...state.groups } };
  for (const op of operations) applyOperation(next, op);
  return next;
}

function applyOperation(state: PersonState, op: PersonOperation): void {
  switch (op.type) {
    case 'create_person': {
      const { personId, properties, isIdentified, createdAt, distinctIds } = op;
      setOwn(state.persons, personId, { personId, properties, isIdentified, createdAt, distinctIds: [...distinctIds] });
      for (const id of distinctIds) setOwn(state.distinctIds, id, personId);
      return;
    }
    case 'add_distinct_id': {
      const person = state.persons[op.personId];
      state.persons[op.personId] = { ...person, distinctIds: [...person.distinctIds, op.distinctId] };
      setOwn(state.distinctIds, op.distinctId, op.personId);
      return;
    }
    case 'update_person': {
      const person = state.persons[op.personId];
      state.persons[op.personId] = { ...person, properties: op.properties, isIdentified: op.isIdentified };
      return;
    }
    case 'merge_persons': {
      const from = state.persons[op.fromPersonId];
      const into = state.persons[op.intoPersonId];
      for (const id of from.distinctIds) setOwn(state.distinctIds, id, op.intoPersonId);
      state.persons[op.intoPersonId] = {
        ...into,
        properties: op.properties,
        isIdentified: op.isIdentified,
        createdAt: op.createdAt,
        distinctIds: [...into.distinctIds, ...from.distinctIds],
      };
      delete state.persons[op.fromPersonId];
      return;
    }
    case 'upsert_group': {
      if (!Object.hasOwn(state.groups, op.groupType) && Object.keys(state.groups).length >= MAX_GROUP_TYPES) return;
      const ofType = { ...(Object.hasOwn(state.groups, op.groupType) ? state.groups[op.groupType] : {}) };
      setOwn(ofType, op.groupKey, { ...(Object.hasOwn(ofType, op.groupKey) ? ofType[op.groupKey] : {}), ...op.properties });
      setOwn(state.groups, op.groupType, ofType);
      return;
    }
  }
}
