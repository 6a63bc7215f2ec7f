import { AppError } from '../../errors';

/** CSV in and out (RFC 4180): the static-cohort upload and the cohort persons export. */

/** Rows of a CSV text: quoted fields may hold commas, quotes (doubled) and line breaks. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  const endField = () => {
    row.push(field);
    field = '';
  };
  const endRow = () => {
    endField();
    rows.push(row);
    row = [];
  };
  const input = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  for (let i = 0; i < input.length; i++) {
    const char = input[i];
    if (quoted && char === '"' && input[i + 1] === '"') {
      field += '"';
      i++;
    } else if (char === '"') quoted = !quoted;
    else if (quoted) field += char;
    else if (char === ',') endField();
    else if (char === '\n' || char === '\r') {
      if (char === '\r' && input[i + 1] === '\n') i++;
      endRow();
    } else field += char;
  }
  if (field || row.length) endRow();
  return rows;
}

const cell = (value: unknown): string => {
  if (value === null || value === undefined) return '';
  const text = value instanceof Date ? value.toISOString() : typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
};

/** One CSV line, CRLF-terminated as RFC 4180 asks. */
export const csvLine = (values: unknown[]) => `${values.map(cell).join(',')}\r\n`;

export type CsvIdKind = 'person_id' | 'distinct_id' | 'email';

const HEADERS: Record<CsvIdKind, string[]> = {
  person_id: ['person_id', 'person-id', 'person .id'],
  distinct_id: ['distinct_id', 'distinct-id'],
  email: ['email', 'e-mail'],
};

const kindOfHeader = (header: string): CsvIdKind | null => {
  const name = header.trim().toLowerCase();
  const kinds = Object.keys(HEADERS) as CsvIdKind[];
  return kinds.find((kind) => HEADERS[kind].includes(name)) ?? null;
};

const csvError = (detail: string) => new AppError('invalid_input', detail, 'csv');

/**
 * PostHog's static-cohort upload: one column of distinct ids (a header is optional: `person_id`,
 * `email` and `distinct_id` headers name what the column holds), or several columns of which
 * one has such a header (preferred in that order).
 */
export function parseCohortCsv(text: string): { kind: CsvIdKind; ids: string[] } {
  const rows = parseCsv(text).filter((r) => r.some((f) => f.trim()));
  if (!rows.length) throw csvError('CSV file is empty. Please upload a CSV file with at least one row of data.');
  const [first, ...rest] = rows;
  let kind: CsvIdKind = 'distinct_id';
  let column = 0;
  let body = rows;
  if (first.filter((f) => f.trim()).length <= 1) {
    const headerKind = kindOfHeader(first[0] ?? '');
    if (headerKind) {
      kind = headerKind;
      body = rest;
    }
  } else {
    const kinds = first.map(kindOfHeader);
    const preferred = (['person_id', 'distinct_id', 'email'] as const).find((k) => kinds.includes(k));
    if (!preferred) {
      const found = first.filter((f) => f.trim()).join(', ');
      throw csvError(
        `Multi-column CSV must contain at least one column with a supported ID header: 'person_id', 'Person .id' (PostHog export format), 'distinct_id', 'distinct-id', or 'email'. Found columns: ${found}`,
      );
    }
    kind = preferred;
    column = kinds.indexOf(preferred);
    body = rest;
  }
  const ids = [...new Set(body.map((r) => (r[column] ?? '').trim()).filter(Boolean))];
  if (!ids.length) {
    throw csvError(
      'CSV file contains no valid person IDs, distinct IDs, or email addresses. Please ensure your file has data rows with person IDs, distinct IDs, or email addresses.',
    );
  }
  return { kind, ids };
}
