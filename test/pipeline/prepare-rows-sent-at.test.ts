import { expect, test } from 'bun:test';
import { prepareRows } from '../../src/pipeline/prepare-rows';
import { FIELD } from '../../src/storage/events/log/row-lines';

test('every row of a request carries its send time as $sent_at (made once for the request)', () => {
  const ctx = { receivedAt: Date.parse('2024-06-01T12:00:00Z'), ip: null, anonymizeIps: false, sentAt: Date.parse('2024-06-01T11:59:59.123Z') };
  let n = 0;
  const rows = prepareRows(ctx, [{ event: 'a', distinct_id: 'd1' }, { event: 'b', distinct_id: 'd2', properties: { x: 1 } }], () => `0190a0a0-0000-7000-8000-${String(++n).padStart(12, '0')}`);
  const lines = new TextDecoder().decode(rows.lines).trimEnd().split('\n');
  const properties = lines.map((line) => JSON.parse(line.slice(line.lastIndexOf(FIELD) + 1)) as Record<string, unknown>);
  expect(properties.map((p) => p.$sent_at)).toEqual(['2024-06-01T11:59:59.123Z', '2024-06-01T11:59:59.123Z']);
  expect(properties[1]?.x).toBe(1);
});
