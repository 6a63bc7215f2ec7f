const UUID_RE = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

/**
 * A UUID as stored (lower case, with dashes), from any form PostHog's Django UUID fields take
 * (upper case, without dashes, in braces, `urn:uuid:`); null when it is not a UUID.
 */
export function normalizeUuid(value: string): string | null {
  const text = value.trim().replace(/^urn:uuid:/i, '').replace(/^\{(.*)\}$/, '$1');
  if (!UUID_RE.test(text)) return null;
  const hex = text.replace(/-/g, '').toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
