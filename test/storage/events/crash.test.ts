import { afterAll, expect, test } from 'bun:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openHarness } from './helpers';

const CYCLES = 5;
let dir = '';
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Read the child's stdout until it is killed; returns every complete line. */
async function collect(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let rest = '';
  for await (const chunk of stream) {
    rest += decoder.decode(chunk, { stream: true });
    const lines = rest.split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) onLine(line);
  }
}

test(
  `kill -9 during ingestion, ${CYCLES} cycles: every acknowledged event is present exactly once`,
  async () => {
    dir = await mkdtemp(join(tmpdir(), 'event-crash-'));
    const acked = new Set<string>();
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const child = Bun.spawn([process.execPath, join(import.meta.dir, 'crash-child.ts'), dir, String(cycle)], {
        stdout: 'pipe',
        stderr: 'inherit',
      });
      let ready: () => void;
      const isReady = new Promise<void>((r) => (ready = r));
      const reading = collect(child.stdout, (line) => {
        if (line === 'READY') return ready();
        const [tag, c, first, count] = line.split(' ');
        if (tag !== 'A') return;
        for (let i = 0; i < Number(count); i++) acked.add(`c${c}-${Number(first) + i}`);
      });
      await Promise.race([isReady, child.exited]);
      // Random moment: inside appends, loads, compactions or checkpoints.
      await Bun.sleep(300 + Math.floor(Math.random() * 1200));
      child.kill(9);
      await child.exited;
      await reading;
      expect(child.signalCode).toBe('SIGKILL');
    }
    expect(acked.size).toBeGreaterThan(1000);

    const h = await openHarness({}, dir);
    try {
      const seen = new Map<string, number>();
      for (const team of [1, 2, 3]) {
        const rel = await h.store.eventsRelation(team);
        const rows = await h.db.query<{ uuid: string }>(`SELECT uuid FROM ${rel.sql} AS events`, rel.params);
        for (const r of rows) seen.set(r.uuid, (seen.get(r.uuid) ?? 0) + 1);
      }
      const lost = [...acked].filter((u) => !seen.has(u));
      const duplicated = [...seen].filter(([, n]) => n > 1).map(([u]) => u);
      expect({ lost: lost.slice(0, 10), lostCount: lost.length }).toEqual({ lost: [], lostCount: 0 });
      expect({ duplicated: duplicated.slice(0, 10), count: duplicated.length }).toEqual({ duplicated: [], count: 0 });
      console.log(`crash test: ${acked.size} acknowledged, ${seen.size} present (${seen.size - acked.size} written but unacknowledged), stats`, h.store.stats());
    } finally {
      await h.store.close();
      await h.db.close();
    }
  },
  60_000,
);
