/** The types PostHog's property definitions carry (`property_type`). */
export const PROPERTY_TYPES = ['String', 'Numeric', 'Boolean', 'DateTime'] as const;
export type PropertyType = (typeof PROPERTY_TYPES)[number];

// A date, optionally with a time: `2024-03-01`, `2024-03-01T12:00:00Z`, `2024-03-01 12:00:00.123+02:00`,
// and the day-first or slashed forms PostHog's ingestion also takes (`01/03/2024`).
const DATE = /^(\d{4}[-/][01]\d[-/][0-3]\d|[0-3]\d[-/][01]\d[-/]\d{4})([ T][0-2]\d:[0-5]\d(:[0-6]\d(\.\d+)?)?(Z|[+-][0-2]\d(:?[0-5]\d)?)?)?$/;

/**
 * The type a value shows, as PostHog's ingestion detects it: numbers are Numeric, booleans and
 * the strings "true"/"false" Boolean (SDKs and forms send both), date-shaped strings DateTime,
 * other strings String. Null, objects and arrays show none: a later value decides.
 */
export function propertyTypeOf(value: unknown): PropertyType | null {
  switch (typeof value) {
    case 'number':
      return Number.isFinite(value) ? 'Numeric' : null;
    case 'boolean':
      return 'Boolean';
    case 'string': {
      // Cheap checks first: this runs for each new key of each request on the ingest path.
      const first = value.charCodeAt(0);
      if (first >= 48 && first <= 57 && value.length >= 10 && value.length <= 40 && DATE.test(value)) return 'DateTime';
      if (value.length === 4 || value.length === 5) {
        const lower = value.toLowerCase();
        if (lower === 'true' || lower === 'false') return 'Boolean';
      }
      return 'String';
    }
    default:
      return null;
  }
}
