import type { PersonEvent } from '../../src/core/ingest/person-updates';

/** A PersonEvent that asks nothing of persons unless `overrides` say so (set, merges, …). */
export function personEvent(overrides: Partial<PersonEvent> = {}): PersonEvent {
  return {
    uuid: '00000000-0000-4000-8000-000000000000',
    event: 'e',
    distinctId: 'user',
    properties: {},
    timestamp: 0,
    set: {},
    setOnce: {},
    unset: [],
    anonDistinctId: null,
    alias: null,
    processPerson: true,
    ...overrides,
  };
}
