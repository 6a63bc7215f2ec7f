import { describe, expect, test } from 'bun:test';
import { mkdtemp, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IntakeContext } from '../../../../src/storage/events';
import { decodeIntakeFrame, readRowFrames, scanFrames } from '../../../../src/storage/events/log/frame-reader';
import { encodeFrame, encodeIntakeFrames, intakeParts } from '../../../../src/storage/events/log/frames';
import { makeEvent, readLinesBack as readBack } from '../helpers';

describe('WAL frames', () => {
  const a = encodeFrame([makeEvent(1), makeEvent(2)]);
  const b = encodeFrame([makeEvent(3)]);
  const c = encodeFrame([makeEvent(4), makeEvent(5), makeEvent(6)]);

  test('whole frames are found with their row counts', () => {
    const scan = scanFrames(Buffer.concat([a, b, c]));
    expect(scan.frames.map((f) => f.rows)).toEqual([2, 1, 3]);
    expect(scan.damaged).toEqual([]);
  });

  test('a torn tail is reported as damaged and the frames before it kept', () => {
    const data = Buffer.concat([a, b, c.subarray(0, c.length - 7)]);
    const scan = scanFrames(data);
    expect(scan.frames.map((f) => f.rows)).toEqual([2, 1]);
    expect(scan.damaged).toEqual([{ start: a.length + b.length, end: data.length }]);
  });

  test('a corrupt frame in the middle costs only itself', () => {
    const bad = Buffer.from(b);
    bad[bad.length - 10] ^= 0xff;
    const scan = scanFrames(Buffer.concat([a, bad, c]));
    expect(scan.frames.map((f) => f.rows)).toEqual([2, 3]);
    expect(scan.damaged).toEqual([{ start: a.length, end: a.length + b.length }]);
  });

  test('zeros after the last frame (a segment file made ahead) are an unused end, not damage', () => {
    const zeros = Buffer.alloc(5000);
    const scan = scanFrames(Buffer.concat([a, b, zeros]));
    expect(scan.frames.map((f) => f.rows)).toEqual([2, 1]);
    expect(scan.damaged).toEqual([]);
    expect(scan.zeroTail).toBe(5000);
    expect(scanFrames(Buffer.concat([a, b, c])).zeroTail).toBe(0);
    const blank = scanFrames(Buffer.alloc(4096));
    expect([blank.frames, blank.damaged, blank.zeroTail]).toEqual([[], [], 4096]);
  });

  test('a torn frame before the zeros is damaged up to where the zeros begin', () => {
    const torn = c.subarray(0, c.length - 7);
    const data = Buffer.concat([a, torn, Buffer.alloc(3000)]);
    const scan = scanFrames(data);
    expect(scan.frames.map((f) => f.rows)).toEqual([2]);
    expect(scan.damaged).toEqual([{ start: a.length, end: a.length + torn.length }]);
    expect(scan.zeroTail).toBe(3000);
  });

  test('frame headers are skipped by the reader', async () => {
    const back = await readBack(Buffer.concat([a, b, c]));
    expect(back.map((r) => r.uuid)).toEqual([1, 2, 3, 4, 5, 6].map((n) => makeEvent(n).uuid));
  });
});

const encodeIntakeFrame = (c: IntakeContext, text: string, events: number) => Buffer.concat(encodeIntakeFrames([intakeParts(c, text, events)]));

describe('intake frames', () => {
  const ctx: IntakeContext = { teamId: 7, receivedAt: Date.UTC(2025, 5, 1), ip: '10.0.0.1', anonymizeIps: false, sentAt: null, engage: false };
  const texts = ['{"event":"a","distinct_id":"x"}', '[{"event":"ü ✓ 😀","distinct_id":"\\n\\u001f"}]', '{\n  "batch": []\n}'];

  test('a group of intake frames (text and byte bodies) and row frames scans back to each context and body', () => {
    // A byte body of 64 KiB or more is written from its own buffer (no copy): one in the middle.
    const large = JSON.stringify({ batch: Array.from({ length: 1500 }, (_, i) => ({ event: 'e', distinct_id: `user-${i}`, properties: { pad: 'x'.repeat(30) } })) });
    const parts = [
      intakeParts(ctx, texts[0], 1),
      intakeParts({ ...ctx, teamId: 8 }, new TextEncoder().encode(texts[1]), 1),
      intakeParts({ ...ctx, teamId: 9 }, new TextEncoder().encode(large), 1500),
      intakeParts({ ...ctx, engage: true }, texts[2], 0),
    ];
    const buffers = encodeIntakeFrames(parts);
    expect(buffers.length).toBe(3); // before the large body, the body itself, after it
    expect(buffers[1].length).toBe(Buffer.byteLength(large));
    const group = Buffer.concat(buffers);
    const rows = encodeFrame([makeEvent(1)]);
    const data = Buffer.concat([group, rows, encodeIntakeFrame(ctx, texts[0], 1)]);
    const scan = scanFrames(data);
    expect(scan.damaged).toEqual([]);
    expect(scan.frames.map((f) => [f.kind, f.rows])).toEqual([['intake', 1], ['intake', 1], ['intake', 1500], ['intake', 0], ['rows', 1], ['intake', 1]]);
    const intake = scan.frames.filter((f) => f.kind === 'intake').map((f) => decodeIntakeFrame(data, f));
    expect(intake).toEqual([
      { context: ctx, text: texts[0] },
      { context: { ...ctx, teamId: 8 }, text: texts[1] },
      { context: { ...ctx, teamId: 9 }, text: large },
      { context: { ...ctx, engage: true }, text: texts[2] },
      { context: ctx, text: texts[0] },
    ]);
  });

  test('the header is fixed-width: length, CRC (hex) and events, zero-padded', () => {
    const frame = encodeIntakeFrame(ctx, texts[1], 12_345);
    const payload = frame.subarray(35);
    const header = `\x1dI1 ${String(payload.length).padStart(10, '0')} ${Bun.hash.crc32(payload).toString(16).padStart(8, '0')} 0000012345\n`;
    expect(frame.subarray(0, 35).toString('latin1')).toBe(header);
    // A CRC with leading zero digits keeps its width.
    const low = Array.from({ length: 5000 }, (_, i) => encodeIntakeFrame(ctx, `{"n":${i}}`, 1)).find((f) => Bun.hash.crc32(f.subarray(35)) < 0x10000000)!;
    expect(low.subarray(15, 23).toString('latin1')).toBe(Bun.hash.crc32(low.subarray(35)).toString(16).padStart(8, '0'));
  });

  test('frames go into the scratch buffer when it is large enough, else into one of their own', () => {
    const scratch = Buffer.alloc(4096, 0x78);
    const parts = [intakeParts(ctx, texts[0], 1), intakeParts(ctx, texts[1], 1)];
    const [into] = encodeIntakeFrames(parts, scratch);
    expect(into.buffer).toBe(scratch.buffer);
    expect(into).toEqual(Buffer.concat(encodeIntakeFrames(parts)));
    const [own] = encodeIntakeFrames(parts, Buffer.alloc(64));
    expect(own.buffer).not.toBe(scratch.buffer);
    expect(own).toEqual(into);
  });

  test('a torn intake frame is damaged, the ones before it kept', () => {
    const one = encodeIntakeFrame(ctx, texts[0], 1);
    const two = encodeIntakeFrame(ctx, texts[1], 1);
    const scan = scanFrames(Buffer.concat([one, two.subarray(0, two.length - 3)]));
    expect(scan.frames.map((f) => f.kind)).toEqual(['intake']);
    expect(scan.damaged).toEqual([{ start: one.length, end: one.length + two.length - 3 }]);
  });
});

describe('readRowFrames (a file read a block at a time)', () => {
  test('frames spanning blocks come back whole and in order, intake frames skipped; a frame that does not check out throws', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'row-frames-'));
    try {
      const frames = [encodeFrame([makeEvent(1), makeEvent(2)]), encodeFrame([makeEvent(3)]), encodeFrame(Array.from({ length: 5 }, (_, i) => makeEvent(10 + i)))];
      const intake = encodeIntakeFrame({ teamId: 1, receivedAt: 0, ip: null, anonymizeIps: false, sentAt: null, engage: false }, '{"event":"x"}', 1);
      const file = join(dir, 'seg');
      await writeFile(file, Buffer.concat([frames[0], intake, frames[1], frames[2]]));
      for (const block of [7, 100, 1 << 20]) {
        const read: Array<{ text: string; rows: number }> = [];
        for await (const f of readRowFrames(file, block)) read.push(f);
        expect(read.map((f) => f.rows)).toEqual([2, 1, 5]);
        expect(read.map((f) => f.text).join('')).toBe(Buffer.concat([frames[0], frames[1], frames[2]].map((f) => f.subarray(f.indexOf(0x0a) + 1))).toString('utf8'));
      }
      const damaged = Buffer.concat([frames[0], frames[1]]);
      damaged[damaged.length - 3] ^= 0xff;
      await writeFile(file, damaged);
      const got: number[] = [];
      let error: unknown = null;
      try {
        for await (const f of readRowFrames(file, 64)) got.push(f.rows);
      } catch (e) {
        error = e;
      }
      expect(got).toEqual([2]);
      expect(String(error)).toContain('does not check out');
      // Damage near the start of a large file is said at once: the rest was read, held and
      // copied once per block until the end of the file before (here 256 MiB, sparse, in 64 KiB
      // blocks: that took longer than the test's time limit).
      await writeFile(file, damaged);
      await truncate(file, 256 * 1024 * 1024);
      const reads: number[] = [];
      error = null;
      try {
        for await (const f of readRowFrames(file, 64 * 1024)) reads.push(f.rows);
      } catch (e) {
        error = e;
      }
      expect({ reads, error: String(error) }).toEqual({ reads: [2], error: `Error: ${file}: a frame at byte ${frames[0].length} does not check out` });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
