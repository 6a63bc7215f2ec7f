import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withPipeline } from '../../src/pipeline';
import { openStorage, type Storage } from '../../src/storage';

/**
 * Rows the pipeline made travel as encoded lines with their project and person written into
 * slots, gathered into frames (large requests' lines as they are, small ones' copied together).
 * A segment whose load keeps failing is moved to the dead letters as that processed copy; its
 * replay must read back every frame (their CRCs over several parts) and store each event once,
 * in its project, with its person.
 */
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const uuid = (n: number) => `01900000-0000-7000-8000-${String(n).padStart(12, '0')}`;
const events = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    uuid: uuid(from + i),
    event: 'replayed',
    distinct_id: `user-${(from + i) % 7}`,
    timestamp: '2026-11-20T10:00:00.000Z',
    properties: { $set: { plan: `p${(from + i) % 3}` }, filler: 'x'.repeat(1200) },
  }));

async function capture(storage: Storage, teamId: number, batch: ReturnType<typeof events>) {
  await storage.events.appendIntake({
    context: { teamId, receivedAt: Date.UTC(2026, 10, 20, 10), ip: null, anonymizeIps: false, sentAt: null, engage: false },
    body: JSON.stringify({ batch }),
    events: batch.length,
    parsed: batch,
    distinctIds: batch.map((e) => e.distinct_id),
  });
}

describe('pipeline rows through the dead letters', () => {
  test('a processed segment that cannot be loaded is dead-lettered whole and replayed once, each event in its project with its person', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'pipeline-dlq-'));
    dirs.push(dataDir);
    const broken = await openStorage(
      withPipeline({ dataDir, eventStore: { maxFlushAttempts: 1, flushRetryMs: 10, hooks: { beforeLoad: () => Promise.reject(new Error('disk on fire')) } } }),
    );
    // Large requests (their lines a part of their own) between small ones (copied together).
    await capture(broken, 1, events(0, 2));
    await capture(broken, 1, events(2, 80));
    await capture(broken, 2, events(82, 1));
    await capture(broken, 1, events(83, 3));
    await capture(broken, 2, events(86, 70));
    await broken.events.flush().catch(() => undefined);
    const deadline = Date.now() + 10_000;
    while ((await broken.events.listDeadLetters()).length === 0 && Date.now() < deadline) await Bun.sleep(50);
    expect((await broken.events.listDeadLetters()).map((d) => d.rows)).toEqual([156]);
    await broken.close().catch(() => undefined);

    const healthy = await openStorage(withPipeline({ dataDir }));
    try {
      expect(await healthy.events.replayDeadLetters()).toMatchObject({ rows: 156 });
      for (const [teamId, expected] of [[1, [...range(0, 82), ...range(83, 86)]], [2, [82, ...range(86, 156)]]] as const) {
        const relation = await healthy.events.eventsRelation(teamId);
        const stored: Array<[string, string, string | null]> = [];
        for await (const chunk of healthy.events.streamQuery(`SELECT uuid, distinct_id, person_id FROM ${relation.sql} AS events ORDER BY uuid`, relation.params)) {
          for (const r of chunk) stored.push([String(r.uuid), String(r.distinct_id), r.person_id === null ? null : String(r.person_id)]);
        }
        expect(stored.map(([u]) => u)).toEqual(expected.map(uuid));
        // Persons were made (and written) when the requests were processed, before the loads failed.
        await healthy.persons.ensureLoaded(teamId);
        expect(stored.filter(([, d, p]) => p === null || p !== healthy.persons.findByDistinctId(teamId, d)?.uuid)).toEqual([]);
      }
    } finally {
      await healthy.close();
    }
  }, 60_000);
});

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from }, (_, i) => from + i);
}
