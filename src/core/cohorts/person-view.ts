/**
 * How a person is shown in cohort listings: PostHog's display name and the flattened CSV row
 * (`properties.<key>` and `distinct_ids.<n>` columns).
 */

export interface PersonView {
  id: number;
  uuid: string;
  properties: Record<string, unknown>;
  createdAt: Date;
  isIdentified: boolean;
  distinctIds: string[];
}

/** PostHog lists at most this many distinct ids per person in person listings. */
export const DISTINCT_ID_LIMIT = 10;

const UUID_LIKE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DEFAULT_NAME_PROPERTIES = ['email', 'name', 'username'];

/**
 * The first set display property (the project's `person_display_name_properties`, by default
 * email, name, username), else a distinct id (one that does not look generated first), else the id.
 */
export function personDisplayName(person: PersonView, nameProperties: string[] | null = DEFAULT_NAME_PROPERTIES): string {
  for (const key of nameProperties ?? DEFAULT_NAME_PROPERTIES) {
    const value = person.properties[key];
    if (value !== undefined && value !== null && value !== '' && value !== false) {
      return typeof value === 'string' ? value : JSON.stringify(value);
    }
  }
  const ids = [...person.distinctIds].sort((a, b) => Number(UUID_LIKE.test(a)) - Number(UUID_LIKE.test(b)));
  return ids[0] ?? String(person.id);
}

/** The header: id, email, name, created_at, then every property but email, then the distinct ids. */
export function personCsvHeader(propertyKeys: string[], distinctIdColumns: number): string[] {
  const properties = [...new Set(propertyKeys)].filter((key) => key !== 'email').sort();
  return [
    'id',
    'email',
    'name',
    'created_at',
    ...properties.map((key) => `properties.${key}`),
    ...Array.from({ length: Math.min(distinctIdColumns, DISTINCT_ID_LIMIT) }, (_, i) => `distinct_ids.${i}`),
  ];
}

/** The person's values in the header's order; nested property values are written as JSON. */
export function personCsvRow(person: PersonView, name: string, header: string[]): unknown[] {
  return header.map((column) => {
    if (column === 'id') return person.id;
    if (column === 'email') return person.properties.email;
    if (column === 'name') return name;
    if (column === 'created_at') return person.createdAt.toISOString();
    if (column.startsWith('properties.')) return person.properties[column.slice('properties.'.length)];
    return person.distinctIds[Number(column.slice('distinct_ids.'.length))];
  });
}
