import { ANY_TEAM } from './recovery';
import { listDeadLetters, readDeadLetterPayload, removeDeadLetter } from './dead-letters';
import { scanFrames } from './frame-reader';
import { frameLines } from './frames';
import type { WalWriter } from './wal';
import type { ReplayResult } from '../types';

/**
 * Feed dead letters (all, or those named) back through the log, like any append: each is durable
 * in the log before its entry is removed, and uuid dedupe makes a replay repeated after a crash
 * harmless. Framed payloads (a whole segment, a capture request) go back frame by frame as they
 * are, a capture request with a new intake sequence number (`nextSeq`); bare rows get a frame.
 * `removed` is called for each entry removed. The caller loads what was replayed.
 */
export async function replayDeadLetters(dataDir: string, wal: WalWriter, ids: readonly string[] | undefined, nextSeq: () => number, removed: () => void): Promise<ReplayResult> {
  const entries = (await listDeadLetters(dataDir)).filter((d) => !ids || ids.includes(d.id));
  const out: ReplayResult = { replayed: [], rows: 0 };
  for (const entry of entries) {
    const payload = await readDeadLetterPayload(dataDir, entry.id);
    if (payload && payload.length > 0) {
      const frames = payload[0] === 0x1d ? scanFrames(payload).frames : null;
      if (!frames) await wal.append([frameLines(payload, entry.rows)], entry.rows, new Map([[ANY_TEAM, entry.rows]]));
      else {
        for (const f of frames) {
          const bytes = payload.subarray(f.start, f.end);
          const extra = f.kind === 'intake' ? { intake: { memo: null, seq: nextSeq() } } : {};
          await wal.append([bytes], f.rows, new Map([[ANY_TEAM, f.rows]]), extra);
        }
      }
    }
    await removeDeadLetter(dataDir, entry.id);
    removed();
    out.replayed.push(entry.id);
    out.rows += entry.rows;
  }
  return out;
}
