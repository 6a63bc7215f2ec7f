import { Buffer } from 'node:buffer';

/**
 * Caps on what one event may carry, in one place (README "Limits"). An event beyond them is
 * dropped behind the 200 and counted, as PostHog drops events over its 1 MB message size with
 * an ingestion warning: one client's oversized event must not cost the rest of its batch, and no
 * stored event may be so large that loading it, noting its definitions or reading it back stalls
 * the server for everyone else.
 */
export const EVENT_LIMITS = {
  /** Bytes of one stored event: its properties as JSON, name, distinct id and elements chain (PostHog: 1 MB). */
  eventBytes: 1024 * 1024,
  /** Properties of one event, `$set`/`$set_once` keys (person properties) included. */
  propertiesPerEvent: 10_000,
  /** Property definitions noted per project and kind (event, person); keys past it are stored, not listed. */
  propertyDefinitionsPerProject: 10_000,
  /** Event name–property key pairs noted per project (the property definitions' `event_names` filter); pairs past it are not noted. */
  eventPropertiesPerProject: 50_000,
  /** Longest property key noted as a definition (PostHog's column is 400 characters); longer keys are stored, not listed. */
  propertyNameLength: 400,
} as const;

export const LIMIT_DROPS = ['event_too_large', 'too_many_properties'] as const;
export type LimitDrop = (typeof LIMIT_DROPS)[number];

/** The smallest JSON a property takes (`"":0,` and a key character): below this, no count is needed. */
const MIN_PROPERTY_JSON = 6;

/**
 * Whether a normalized event is over the per-event limits, from the JSON text of its properties
 * (already made to store it) and its other text fields; null when it is within them. The keys
 * are counted only when the text is long enough to hold that many, so a usual event costs a few
 * comparisons.
 */
export function eventOverLimits(
  propertiesJson: string,
  properties: Readonly<Record<string, unknown>>,
  other: { event: string; distinctId: string; elementsChain: string },
): LimitDrop | null {
  const max = EVENT_LIMITS.eventBytes;
  const chars = propertiesJson.length + other.event.length + other.distinctId.length + other.elementsChain.length;
  // A UTF-16 unit takes 1 to 3 bytes in UTF-8: measure the bytes only when the count is in doubt.
  if (chars > max) return 'event_too_large';
  if (chars * 3 > max && utf8Bytes(propertiesJson) + utf8Bytes(other.event) + utf8Bytes(other.distinctId) + utf8Bytes(other.elementsChain) > max) {
    return 'event_too_large';
  }
  if (propertiesJson.length >= EVENT_LIMITS.propertiesPerEvent * MIN_PROPERTY_JSON && countProperties(properties) > EVENT_LIMITS.propertiesPerEvent) {
    return 'too_many_properties';
  }
  return null;
}

function countProperties(properties: Readonly<Record<string, unknown>>): number {
  let n = 0;
  for (const key in properties) {
    n++;
    const value = properties[key];
    if ((key === '$set' || key === '$set_once') && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const _ in value) n++;
    }
  }
  return n;
}

const utf8Bytes = (text: string): number => Buffer.byteLength(text, 'utf8');
