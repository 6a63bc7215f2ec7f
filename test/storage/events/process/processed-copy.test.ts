import { afterEach, expect, test } from 'bun:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newProcState } from '../../../../src/storage/events/process/processed-copy';
import { RecentUuids } from '../../../../src/storage/events/load/recent-uuids';
import { readRowFrames } from '../../../../src/storage/events/log/frame-reader';
import { lineBuffer, POOLED_MIN_BYTES, spareLineBytes, takeSpares } from '../../../../src/storage/events/log/line-buffers';

let dir: string | null = null;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = null;
});

test('a processed copy holds every request\'s rows in order, frame after frame, while the small parts\' buffers are filled again', async () => {
  dir = await mkdtemp(join(tmpdir(), 'proc-copy-'));
  const st = newProcState(new RecentUuids(100_000, 8), join(dir, 'seg.proc'));
  // 60 requests of 100 rows (~35 KB each: the small parts' path), 2,000 rows to a frame: three
  // frames of ~700 KB, each over three buffers, the later frames' filled again once the earlier
  // frames are written.
  const expected: string[] = [];
  for (let r = 0; r < 60; r++) {
    const lines = Array.from({ length: 100 }, (_, i) => `row-${r}-${i}\t${String(r * 100 + i).padStart(6, '0').repeat(55)}\n`);
    expected.push(...lines);
    st.add({ teamId: 1, lines: Buffer.from(lines.join('')), rows: 100, uuids: lines.map((_, i) => `u-${r}-${i}`), span: [r, r] });
    // Mid-frame: the frame before is written by now, its buffers free for the rest.
    if (r % 20 === 9) await st.writer.settled();
  }
  st.flush();
  await st.writer.finish();
  const frames: Array<{ rows: number; text: string }> = [];
  for await (const f of readRowFrames(join(dir, 'seg.proc'))) frames.push(f);
  expect(frames.map((f) => f.rows)).toEqual([2000, 2000, 2000]);
  expect(frames.map((f) => f.text).join('')).toBe(expected.join(''));
  expect(st.rows).toBe(6000);
});

test('a large request\'s lines buffer is given back once its frame is written (not before), and its rows stay as written when it is filled again', async () => {
  takeSpares();
  dir = await mkdtemp(join(tmpdir(), 'proc-copy-'));
  const st = newProcState(new RecentUuids(100_000, 8), join(dir, 'seg.proc'));
  const text = Array.from({ length: 1000 }, (_, i) => `row-${i}\t${'p'.repeat(400)}\n`).join('');
  const lines = lineBuffer(text.length);
  lines.write(text);
  const encoded = lines.subarray(0, text.length);
  // A small request's lines are copied into the frame's own buffer: its buffer is free at once.
  const smallLines = lineBuffer(POOLED_MIN_BYTES);
  smallLines.write('small-0\tq\n');
  st.add({ teamId: 1, lines: smallLines.subarray(0, 10), rows: 1, uuids: ['s-0'], span: [0, 0] });
  const copied = takeSpares();
  expect(copied.length).toBe(1);
  expect(copied[0]).toBe(smallLines.buffer as ArrayBuffer);
  st.add({ teamId: 1, lines: encoded, rows: 1000, uuids: Array.from({ length: 1000 }, (_, i) => `u-${i}`), span: [1, 1] });
  st.flush();
  expect(spareLineBytes()).toBe(0); // queued, not yet written
  await st.writer.settled();
  const spares = takeSpares();
  expect(spares.length).toBe(1);
  expect(spares[0]).toBe(lines.buffer as ArrayBuffer);
  new Uint8Array(spares[0]).fill(0x78); // filled again by the next request
  await st.writer.finish();
  const frames: Array<{ rows: number; text: string }> = [];
  for await (const f of readRowFrames(join(dir, 'seg.proc'))) frames.push(f);
  expect(frames.map((f) => f.rows)).toEqual([1001]);
  expect(frames[0].text).toBe('small-0\tq\n' + text);
});
