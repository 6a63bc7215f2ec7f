import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hotValuesOf } from '../src/core/events/columns';
import { uuidv7 } from '../src/ids';
import { openStorage } from '../src/storage';
import { runCliProcess } from './helpers/server-process';
import { withPipeline } from '../src/pipeline';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const row = (i: number) => {
  const properties = { n: i };
  return {
    uuid: uuidv7(),
    teamId: 1,
    event: 'dead-lettered',
    distinctId: `d${i}`,
    personId: null,
    properties: JSON.stringify(properties),
    timestamp: Date.now(),
    createdAt: Date.now(),
    elementsChain: '',
    hot: hotValuesOf(properties),
  };
};

describe('operator CLI: dead letters', () => {
  test('acknowledged events that could not be loaded are listed with the reason and replayed into storage', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'dlq-'));
    dirs.push(dataDir);
    // A store whose loads always fail: the acknowledged rows must end up in the dead letters.
    const broken = await openStorage(withPipeline({
      dataDir,
      eventStore: {
        maxFlushAttempts: 1,
        flushRetryMs: 10,
        hooks: {
          beforeLoad() {
            throw new Error('disk on fire');
          },
        },
      },
    }));
    const rows = Array.from({ length: 25 }, (_, i) => row(i));
    await broken.events.append(rows);
    await broken.events.flush().catch(() => undefined);
    const deadline = Date.now() + 10_000;
    while ((await broken.events.listDeadLetters()).length === 0 && Date.now() < deadline) await Bun.sleep(50);
    await broken.close().catch(() => undefined);

    const listed = await runCliProcess(['dlq', 'list', '--json'], dataDir);
    expect(listed.code).toBe(0);
    const letters = JSON.parse(listed.stdout);
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({ rows: 25, reason: expect.stringContaining('disk on fire') });

    const replayed = await runCliProcess(['dlq', 'replay'], dataDir);
    expect(replayed.code).toBe(0);
    expect(replayed.stdout).toContain('replayed 1 dead letter(s), 25 rows');
    expect(JSON.parse((await runCliProcess(['dlq', 'list', '--json'], dataDir)).stdout)).toEqual([]);

    const healthy = await openStorage(withPipeline({ dataDir }));
    const relation = await healthy.events.eventsRelation(1);
    const stored: string[] = [];
    for await (const chunk of healthy.events.streamQuery(`SELECT uuid FROM ${relation.sql} AS events ORDER BY uuid`, relation.params)) {
      for (const r of chunk) stored.push(String(r.uuid));
    }
    await healthy.close();
    expect(stored).toEqual(rows.map((r) => r.uuid).sort());
  }, 60_000);
});
