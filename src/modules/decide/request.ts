import type { PayloadHints } from '../../core/ingest/decode-payload';

/** A `/decide/` or `/flags/` body, read as leniently as PostHog reads it. */
export interface FlagRequest {
  token: string | null;
  /** With a personal API key in place of the token: which of the owner's projects. */
  projectId: string | null;
  /** null when absent (a 400); numbers become strings; cut to 200 characters like Rust. */
  distinctId: string | null;
  groups: Record<string, string | number>;
  personProperties: Record<string, unknown>;
  groupProperties: Record<string, Record<string, unknown>>;
  /** The previous anonymous id: the hash key of flags with experience continuity. */
  anonDistinctId: string | null;
  disableFlags: boolean;
  /** `flag_keys_to_evaluate` (Rust also `flag_keys`): only these flags. */
  flagKeys: string[] | null;
}

type Raw = Record<string, unknown>;

const MAX_DISTINCT_ID = 200;

const isObject = (value: unknown): value is Raw => typeof value === 'object' && value !== null && !Array.isArray(value);

const firstString = (...values: unknown[]): string | null => {
  for (const value of values) if (typeof value === 'string' && value !== '') return value;
  return null;
};

function readDistinctId(body: Raw): string | null {
  const value = body.distinct_id ?? body.$distinct_id;
  if (value === undefined || value === null) return null;
  const text = typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
  return text.slice(0, MAX_DISTINCT_ID);
}

/** Python's `process_bool`: true, "true" (any case) and "1". */
const isTrue = (value: unknown) => value === true || value === 1 || (typeof value === 'string' && /^(true|1)$/i.test(value.trim()));

/** `{}` (what SDKs send when there is nothing) costs no copy. */
const isEmpty = (value: Raw): boolean => {
  for (const _ in value) return false;
  return true;
};

const NONE: Readonly<Record<string, never>> = Object.freeze({});

const readGroups = (value: unknown): Record<string, string | number> =>
  isObject(value) && !isEmpty(value)
    ? Object.fromEntries(Object.entries(value).filter((entry): entry is [string, string | number] => typeof entry[1] === 'string' || typeof entry[1] === 'number'))
    : NONE;

const readGroupProperties = (value: unknown): Record<string, Record<string, unknown>> =>
  isObject(value) && !isEmpty(value) ? Object.fromEntries(Object.entries(value).filter((entry): entry is [string, Raw] => isObject(entry[1]))) : NONE;

const readFlagKeys = (value: unknown): string[] | null =>
  Array.isArray(value) ? value.filter((key): key is string => typeof key === 'string') : null;

export function readFlagRequest(payload: unknown, hints: PayloadHints): FlagRequest {
  const body: Raw = isObject(payload) ? payload : {};
  const personProperties = body.person_properties ?? body.$properties;
  return {
    token: firstString(body.token, body.api_key, body.$token, hints.token),
    projectId: firstString(body.project_id, hints.projectId) ?? (typeof body.project_id === 'number' ? String(body.project_id) : null),
    distinctId: readDistinctId(body),
    groups: readGroups(body.groups),
    personProperties: isObject(personProperties) ? personProperties : {},
    groupProperties: readGroupProperties(body.group_properties),
    anonDistinctId: firstString(body.$anon_distinct_id),
    disableFlags: isTrue(body.disable_flags),
    flagKeys: readFlagKeys(body.flag_keys_to_evaluate ?? body.flag_keys),
  };
}
