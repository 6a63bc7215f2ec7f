import { describe, expect, test } from 'bun:test';
import type { PersonObject } from '../../src/modules/events/event-object';
import { boundedMemo, jsonSlices, type JsonSliceOptions } from '../../src/modules/events/export-json';
import type { ListContext } from '../../src/modules/events/list';
import type { Row } from '../../src/storage/db';
import { FileCounts } from '../../src/storage/events/read/counts';
import type { QueryRunner } from '../../src/storage/events/read/runner';

/**
 * What the JSON export holds while it streams one slice: its memos of persons' and elements'
 * JSON and the text of the results not sent yet stay bounded however many rows the slice has.
 * The slice's rows come from a source that yields them as one DuckDB chunk.
 */
const CHAIN = 'a.btn:nth-child="1"nth-of-type="1"text="Go"';
const ROWS: Row[] = Array.from({ length: 60 }, (_, i) => ({
  uuid: `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`,
  event: 'view',
  distinct_id: `d${i % 10}`,
  properties: JSON.stringify({ i }),
  timestamp: new Date(Date.UTC(2024, 0, 1) - i * 1000),
  elements_chain: i % 2 ? `${CHAIN}${i % 10}` : '',
}));

function exportOf(options: JsonSliceOptions) {
  const persons: string[] = [];
  const ctx: ListContext = {
    runner: {} as QueryRunner,
    teamId: 1,
    now: new Date(0),
    personFilter: null,
    flushPersons: async () => undefined,
    propertyTypes: async () => new Map(),
    personOf(distinctId): PersonObject {
      persons.push(distinctId);
      return { is_identified: false, distinct_ids: [distinctId], properties: { note: `person ${distinctId}` } };
    },
    counts: new FileCounts(),
  };
  const page = { last: null, more: false };
  const slices = [{ from: 0, to: Date.UTC(2025, 0, 1), rows: ROWS.length, limit: null }];
  const rows = async function* () {
    yield ROWS;
  };
  const chunks = jsonSlices(ctx, slices, null, async () => rows(), page, options);
  return { chunks, persons };
}

async function read(options: JsonSliceOptions): Promise<{ chunks: string[]; persons: string[] }> {
  const { chunks, persons } = exportOf(options);
  const out: string[] = [];
  const decoder = new TextDecoder();
  for await (const chunk of chunks) out.push(decoder.decode(chunk));
  return { chunks: out, persons };
}

describe('jsonSlices within one slice', () => {
  test('the memos: each person looked up once while they fit, again once the memo passed its bound', async () => {
    const roomy = await read({});
    expect(roomy.persons.length).toBe(10);
    // About two persons' JSON: the memo is emptied every few rows of the same slice.
    const small = await read({ memoChars: 200 });
    expect(small.persons.length).toBeGreaterThan(30);
    expect(small.chunks.join('')).toBe(roomy.chunks.join(''));
    const results = JSON.parse(`[${roomy.chunks.join('')}]`);
    expect(results.length).toBe(60);
    expect(results[1]).toMatchObject({ distinct_id: 'd1', person: { distinct_ids: ['d1'] }, elements: [{ tag_name: 'a', text: 'Go' }] });
  });

  test('the results text is sent in chunks of about chunkChars, not one string a DuckDB chunk', async () => {
    const whole = await read({});
    expect(whole.chunks.length).toBe(1);
    const longest = Math.max(...JSON.parse(`[${whole.chunks[0]}]`).map((e: unknown) => JSON.stringify(e).length + 1));
    const cut = await read({ chunkChars: 1_000 });
    expect(cut.chunks.join('')).toBe(whole.chunks[0]!);
    expect(cut.chunks.length).toBeGreaterThan(5);
    for (const chunk of cut.chunks) expect(chunk.length).toBeLessThan(1_000 + longest);
  });
});

describe('boundedMemo', () => {
  test('computes once while the memo fits, empties it when it would not, keeps no value longer than the bound', () => {
    const computed: string[] = [];
    const memo = boundedMemo(10, (key) => {
      computed.push(key);
      return key === 'big' ? 'x'.repeat(20) : key.toUpperCase();
    });
    expect([memo('ab'), memo('cd'), memo('ab')]).toEqual(['AB', 'CD', 'AB']);
    expect(computed).toEqual(['ab', 'cd']);
    // 'ef' (4 characters) would make 12: the memo starts again with it alone.
    memo('ef');
    memo('ab');
    expect(computed).toEqual(['ab', 'cd', 'ef', 'ab']);
    memo('big');
    memo('big');
    expect(computed.slice(-2)).toEqual(['big', 'big']);
  });
});
