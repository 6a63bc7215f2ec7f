import { describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { limitMallocArenas } from '../src/native-malloc';

const child = (args: string[]) => {
  const run = Bun.spawnSync([process.execPath, join(import.meta.dir, 'helpers', 'malloc-arenas-child.ts'), ...args], { stderr: 'pipe' });
  if (run.exitCode !== 0) throw new Error(`child failed: ${run.stderr.toString()}`);
  return JSON.parse(run.stdout.toString()) as { limited: boolean | null; before: number; after: number };
};

describe('limitMallocArenas', () => {
  test("DuckDB's threads make no arenas of their own once the arenas are capped; without the cap they do", () => {
    const free = child([]);
    expect(free.after).toBeGreaterThan(free.before);
    const capped = child(['limit']);
    expect(capped.limited).toBe(true);
    // The process's own threads made theirs before any code ran; none is added after the cap.
    expect(capped.after).toBe(capped.before);
  });

  test('a C library it cannot open is left as it is', () => {
    expect(limitMallocArenas(2, 'libc-that-is-not-here.so')).toBe(false);
  });
});
