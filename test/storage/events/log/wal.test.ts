import { afterEach, describe, expect, test } from 'bun:test';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listDeadLetters } from '../../../../src/storage/events/log/dead-letters';
import { recoverWal } from '../../../../src/storage/events/log/recovery';
import { segmentName, type SealedSegment } from '../../../../src/storage/events/log/segments';
import { WalWriter } from '../../../../src/storage/events/log/wal';
import { encodeFrame } from '../../../../src/storage/events/log/frames';
import { scanFrames } from '../../../../src/storage/events/log/frame-reader';
import { makeEvent } from '../helpers';

const MiB = 1024 * 1024;
let dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
  dirs = [];
});

async function openWal(durable: boolean, mayPrepare?: (bytes: number) => boolean) {
  const dir = await mkdtemp(join(tmpdir(), 'wal-'));
  dirs.push(dir);
  const sealed: SealedSegment[] = [];
  const wal = new WalWriter(
    { dir, durable, groupCommitMs: 0, segmentMaxRows: 1_000_000, segmentMaxBytes: 64 * MiB, segmentMaxAgeMs: 60_000, relaxedSyncMs: 1000, now: Date.now, onSeal: (s) => sealed.push(s), mayPrepare },
    1,
  );
  return { dir, wal, sealed };
}

/** ~10 KB frames, appended one at a time: each its own group commit. */
const frame = encodeFrame(Array.from({ length: 25 }, (_, i) => makeEvent(i + 1, { properties: JSON.stringify({ pad: 'x'.repeat(300), i }) })));
const appendFrames = async (wal: WalWriter, n: number, f: Buffer = frame) => {
  for (let i = 0; i < n; i++) await wal.append([f], 25, new Map([[1, 25]]));
};

describe('segment files made ahead (durable mode)', () => {
  test('after a segment of small group commits, a later one starts as a file of zeros; sealed, it is cut to its frames', async () => {
    const { dir, wal, sealed } = await openWal(true);
    await appendFrames(wal, 40); // ~400 KB in 40 flushes
    await wal.seal();
    await appendFrames(wal, 1); // opens segment 2, which has the next one made from segment 1's size
    await wal.whenPrepared();
    expect((await readdir(dir)).filter((n) => n.startsWith('next-'))).toHaveLength(1);
    await wal.seal();

    await appendFrames(wal, 3); // segment 3: the file made ahead, renamed
    const path3 = join(dir, segmentName(3));
    expect((await stat(path3)).size).toBe(Math.ceil((sealed[0].bytes * 1.25) / MiB) * MiB);
    const during = await readFile(path3);
    expect(scanFrames(during).frames).toHaveLength(3);
    expect(during.subarray(3 * frame.length).every((b) => b === 0)).toBe(true);
    await wal.seal();

    expect(sealed.map((s) => s.id)).toEqual([1, 2, 3]);
    expect(sealed[2].bytes).toBe(3 * frame.length);
    expect((await stat(path3)).size).toBe(3 * frame.length);
    expect(await readFile(path3)).toEqual(Buffer.concat([frame, frame, frame]));
    await wal.close();
    expect((await readdir(dir)).filter((n) => !/^seg-/.test(n))).toEqual([]); // the next file made ahead is removed
  });

  test('not made after large group commits, in relaxed mode, or when the disk cannot spare it', async () => {
    const big = encodeFrame(Array.from({ length: 25 }, (_, i) => makeEvent(i + 1, { properties: JSON.stringify({ pad: 'x'.repeat(20_000), i }) })));
    const asked: number[] = [];
    const noRoom = (bytes: number) => (asked.push(bytes), false);
    for (const [durable, f, mayPrepare] of [[true, big, undefined], [false, frame, undefined], [true, frame, noRoom]] as const) {
      const { dir, wal } = await openWal(durable, mayPrepare);
      await appendFrames(wal, 40, f);
      await wal.seal();
      await appendFrames(wal, 1, f);
      await wal.whenPrepared();
      expect((await readdir(dir)).sort()).toEqual([segmentName(1), segmentName(2)]);
      await wal.close();
    }
    expect(asked).toEqual([MiB]); // asked once, for the size it would have made
  });

  test('after a crash, recovery keeps the frames of a segment made ahead and cuts its zeros, with no dead letter', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'wal-recover-'));
    dirs.push(dir);
    const walDir = join(dir, 'wal');
    await mkdir(walDir);
    const file = Buffer.alloc(MiB);
    frame.copy(file, 0);
    frame.copy(file, frame.length);
    await writeFile(join(walDir, segmentName(7)), file);
    await writeFile(join(walDir, 'next-3.wal.tmp'), Buffer.alloc(MiB)); // a file being made ahead
    const recovered = await recoverWal(dir, walDir, 0);
    expect(recovered.segments.map((s) => [s.id, s.rows, s.bytes])).toEqual([[7, 50, 2 * frame.length]]);
    expect(recovered.damagedBytes).toBe(0);
    expect(await readFile(join(walDir, segmentName(7)))).toEqual(Buffer.concat([frame, frame]));
    expect(await readdir(walDir)).toEqual([segmentName(7)]);
    expect(await listDeadLetters(dir)).toEqual([]);
  });
});
