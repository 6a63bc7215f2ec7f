import { describe, expect, test } from 'bun:test';
import { hotValuesOf } from '../../../../src/core/events/columns';
import { scanFrames } from '../../../../src/storage/events/log/frame-reader';
import { encodeFrame, frameHeader } from '../../../../src/storage/events/log/frames';
import { encodeRowLines, fillPersonSlot, fillTeamSlot } from '../../../../src/storage/events/log/row-lines';
import { makeEvent, readLinesBack as readBack } from '../helpers';

describe('row line format', () => {
  test('hostile strings round-trip exactly through DuckDB', async () => {
    const nasty = ['a\x1fb', 'line\nbreak', 'cr\r\n', '\x1e quote \x1e\x1e', '\x15', '\x1dW1 1 2 3', 'nul\x00byte', '"quoted"', 'tab\there', 'ünïcødé 漢字 🎉', ''];
    const rows = nasty.map((s, i) =>
      // person_id is a uuid or NULL (a slot the encoder fills), whatever the other fields hold.
      makeEvent(i, { event: s, distinctId: s || 'd', personId: i % 2 ? null : `0190aaaa-bbbb-7ccc-8ddd-${String(i).padStart(12, '0')}`, elementsChain: s, hot: [s, null, s, s] }),
    );
    // properties with a control character cannot come from JSON.stringify, but must survive too
    rows.push(makeEvent(99, { properties: '{"a":\n1}', hot: hotValuesOf({}) }));
    const back = await readBack(encodeFrame(rows));
    expect(back.length).toBe(rows.length);
    back.forEach((r, i) => {
      const src = rows[i];
      expect(r.uuid).toBe(src.uuid);
      expect(r.event).toBe(src.event);
      expect(r.distinct_id).toBe(src.distinctId);
      expect(r.person_id).toBe(src.personId);
      expect(r.elements_chain).toBe(src.elementsChain);
      expect([r.mat_browser, r.mat_os, r.mat_current_url, r.mat_session_id]).toEqual([...src.hot!]);
      expect(JSON.parse(String(r.properties))).toEqual(JSON.parse(src.properties));
      expect((r.timestamp as Date).getTime()).toBe(src.timestamp);
    });
  });

  test('lines encoded before their project and person are known: hostile strings round-trip, and each slot reads as the id written into it (a person never written: NULL)', async () => {
    const nasty = ['a\x1fb', 'line\nbreak', '\x1e quote \x1e\x1e', '\x15', 'ünïcødé 漢字 🎉', 'plain', '\x1dW1 1 2 3'];
    const rows = nasty.map((s, i) => makeEvent(i, { event: s, distinctId: s, elementsChain: i % 2 ? s : '', hot: [s, null, i % 3 ? s : null, '\x15'] }));
    const { lines, teams, persons } = encodeRowLines(rows);
    const buf = Buffer.from(lines.buffer, lines.byteOffset, lines.byteLength);
    const personOf = (i: number) => (i % 3 === 2 ? null : `0190aaaa-bbbb-7ccc-8ddd-${String(i).padStart(12, '0')}`);
    const teamOf = (i: number) => [1, 42, 2_000_000_000][i % 3];
    rows.forEach((_, i) => {
      fillTeamSlot(buf, teams[i], teamOf(i));
      fillPersonSlot(buf, persons[i], personOf(i));
    });
    expect(() => fillPersonSlot(buf, persons[0], 'not-a-uuid')).toThrow();
    expect(() => fillTeamSlot(buf, teams[0], 1e10)).toThrow();
    const header = frameHeader(lines.length, Bun.hash.crc32(lines), rows.length);
    const framed = Buffer.concat([header, lines]);
    expect(scanFrames(framed).frames.map((f) => f.rows)).toEqual([rows.length]);
    const back = await readBack(framed);
    expect(back.map((r) => [r.uuid, r.team_id, r.event, r.distinct_id, r.person_id, r.elements_chain, r.mat_browser, r.mat_os, r.mat_current_url, r.mat_session_id])).toEqual(
      rows.map((r, i) => [r.uuid, teamOf(i), r.event, r.distinctId, personOf(i), r.elementsChain, ...r.hot!]),
    );
  });

  test('a line whose team slot was never written is refused by the load (no row lands in no project)', async () => {
    const { lines, persons } = encodeRowLines([makeEvent(1)]);
    fillPersonSlot(Buffer.from(lines.buffer, lines.byteOffset, lines.byteLength), persons[0], null);
    const framed = Buffer.concat([frameHeader(lines.length, Bun.hash.crc32(lines), 1), lines]);
    expect(await readBack(framed).then(() => 'loaded', (e: unknown) => String(e))).toMatch(/Could not convert/);
  });

  test('hot values are extracted when the caller does not pass them', async () => {
    const row = makeEvent(1, { hot: undefined });
    const [back] = await readBack(encodeFrame([row]));
    expect(back.mat_browser).toBe('Chrome');
    expect(back.mat_current_url).toBe('https://example.com/1');
  });

  test('rejects rows without a uuid or with a non-finite timestamp', () => {
    expect(() => encodeFrame([makeEvent(1, { uuid: '' })])).toThrow();
    expect(() => encodeFrame([makeEvent(1, { timestamp: Number.NaN })])).toThrow();
  });
});
