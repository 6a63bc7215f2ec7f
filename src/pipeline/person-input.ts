import type { NormalizedEvent } from '../core/ingest/normalize-event';
import type { PersonEvent } from '../core/ingest/person-updates';

/**
 * What one event asks of persons, as it crosses from the thread that normalized it to the one
 * that owns the persons: the `PersonEvent` with only the properties person planning reads (a
 * `$groupidentify`'s group fields), and empty parts left out.
 */
export interface PersonInput {
  u: string;
  e: string;
  d: string;
  t: number;
  set?: Record<string, unknown>;
  once?: Record<string, unknown>;
  unset?: string[];
  anon?: string;
  alias?: string;
  /** `$process_person_profile: false`. */
  off?: true;
  group?: Record<string, unknown>;
}

const GROUP_KEYS = ['$group_type', '$group_key', '$group_set'] as const;

const isEmpty = (o: Record<string, unknown>) => {
  for (const _ in o) return false;
  return true;
};

export function toPersonInput(e: NormalizedEvent): PersonInput {
  const p: PersonInput = { u: e.uuid, e: e.event, d: e.distinctId, t: e.timestamp };
  if (!isEmpty(e.set)) p.set = e.set;
  if (!isEmpty(e.setOnce)) p.once = e.setOnce;
  if (e.unset.length) p.unset = e.unset;
  if (e.anonDistinctId !== null) p.anon = e.anonDistinctId;
  if (e.alias !== null) p.alias = e.alias;
  if (!e.processPerson) p.off = true;
  if (e.event === '$groupidentify') {
    const group: Record<string, unknown> = {};
    for (const k of GROUP_KEYS) if (k in e.properties) group[k] = e.properties[k];
    p.group = group;
  }
  return p;
}

export function fromPersonInput(p: PersonInput): PersonEvent {
  return {
    uuid: p.u,
    event: p.e,
    distinctId: p.d,
    timestamp: p.t,
    properties: p.group ?? {},
    set: p.set ?? {},
    setOnce: p.once ?? {},
    unset: p.unset ?? [],
    anonDistinctId: p.anon ?? null,
    alias: p.alias ?? null,
    processPerson: p.off !== true,
  };
}
