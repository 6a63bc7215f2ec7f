import { describe, expect, test } from 'bun:test';
import { createWriterLoop } from '../../src/cluster/writer-loop';
import type { WriterPass } from '../../src/cluster/writer';
import { silentLogger } from '../../src/logger';

const pass = (entries: number, partitions = [0, 3]): WriterPass => ({ taken: entries, entries, rows: entries, deadLettered: 0, partitions });

/** A loop over scripted passes, a manual clock and a sleep that only records (and moves the clock). */
function harness(script: Array<WriterPass | Error>) {
  let clock = 0;
  const slept: number[] = [];
  const trimmed: number[] = [];
  const pruned: Array<[number, number]> = [];
  let released = 0;
  const loop = createWriterLoop({
    writer: {
      pass: async () => {
        const next = script.shift() ?? pass(0);
        if (next instanceof Error) throw next;
        return next;
      },
      release: async () => void released++,
    },
    log: { trim: async (p) => void trimmed.push(p), pruneConsumers: async (p, idle) => pruned.push([p, idle]) },
    logger: silentLogger,
    now: () => clock,
    sleep: async (ms) => {
      slept.push(ms);
      clock += ms;
    },
    idleMs: 200,
    retryMs: 1_000,
    trimEveryMs: 5_000,
    consumerIdleMs: 60_000,
  });
  return { loop, slept, trimmed, pruned, released: () => released, advance: (ms: number) => (clock += ms) };
}

describe('the writer loop', () => {
  test('no pause while there is work; the idle pause when a pass finds none; the retry pause after a failure', async () => {
    const h = harness([pass(5), pass(2), pass(0), new Error('ClickHouse is away'), pass(1)]);
    const turns = [];
    for (let i = 0; i < 5; i++) turns.push((await h.loop.turn())?.entries ?? null);
    expect(turns).toEqual([5, 2, 0, null, 1]);
    expect(h.slept).toEqual([200, 1_000]);
  });

  test("the held partitions are trimmed, and their idle consumers pruned, at most once per interval", async () => {
    const h = harness([pass(1), pass(1), pass(1)]);
    await h.loop.turn();
    expect([h.trimmed, h.pruned]).toEqual([[], []]);
    h.advance(5_000);
    await h.loop.turn();
    expect([h.trimmed, h.pruned]).toEqual([[0, 3], [[0, 60_000], [3, 60_000]]]);
    await h.loop.turn();
    expect([h.trimmed, h.pruned]).toEqual([[0, 3], [[0, 60_000], [3, 60_000]]]);
  });

  test('stop: the turn under way ends, then the partitions are released', async () => {
    const h = harness([]);
    const running = h.loop.run();
    h.loop.stop();
    await running;
    expect(h.released()).toBe(1);
  });
});
