import { describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { isAlive } from '../../src/cli/cluster/processes';
import { nextDelay, supervise, type Supervised } from '../../src/cli/cluster/supervise';
import { eventually } from '../helpers/cluster';

/** The local cluster's writer supervisor: a writer that exits is started again, with backoff; a stop stops it for good. */
describe('the writer supervisor', () => {
  test('starts the process again after each exit, waiting 1 s, then twice as long while it keeps dying young; stop signals it and ends', async () => {
    let now = 0;
    const events: string[] = [];
    const children: Array<{ pid: number; exit: (how: string) => void }> = [];
    let sleeping: (() => void) | null = null;
    const supervisor = supervise({
      start(): Supervised {
        let exit!: (how: string) => void;
        const exited = new Promise<string>((r) => (exit = r));
        const pid = 100 + children.length;
        children.push({ pid, exit });
        return { pid, exited, signal: (s) => (events.push(`${s} ${pid}`), exit(`signal ${s}`)) };
      },
      now: () => now,
      sleep: (ms) => new Promise<void>((r) => (events.push(`sleep ${ms}`), (sleeping = r))),
      notePid: (pid) => void events.push(`pid ${pid}`),
      say: () => undefined,
    });
    const tick = () => Bun.sleep(1);
    // Dies after 5 s, then after 2 s: the waits double; then it runs 2 minutes: back to 1 s.
    for (const ranMs of [5_000, 2_000, 120_000]) {
      now += ranMs;
      children.at(-1)!.exit('signal SIGKILL');
      await tick();
      now += 1;
      sleeping!();
      await tick();
    }
    supervisor.stop('SIGTERM');
    await supervisor.done;
    expect(events).toEqual(['pid 100', 'sleep 1000', 'pid 101', 'sleep 2000', 'pid 102', 'sleep 1000', 'pid 103', 'SIGTERM 103', 'pid null']);
  });

  test('the wait never grows past 30 s', () => {
    expect([nextDelay(0, null), nextDelay(0, 1_000), nextDelay(0, 16_000), nextDelay(0, 30_000), nextDelay(60_000, 30_000)]).toEqual([1_000, 2_000, 30_000, 30_000, 1_000]);
  });

  test('as a process: kill -9 of the child, another is started and its PID noted; SIGTERM stops the child and the supervisor, the PID file removed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hogbase-supervise-'));
    const pidFile = join(dir, 'child.pid');
    const supervisor = Bun.spawn([process.execPath, resolve(import.meta.dir, '../../src/cli/cluster/supervise.ts'), pidFile, '--', '/bin/sleep', '60'], { stdout: 'ignore', stderr: 'pipe' });
    const childPid = () => (existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : 0);
    try {
      const first = await eventually(async () => childPid(), (pid) => pid > 0, 10_000);
      expect(isAlive(first)).toBe(true);
      process.kill(first, 'SIGKILL');
      const second = await eventually(async () => childPid(), (pid) => pid > 0 && pid !== first, 10_000);
      expect(second).not.toBe(first);
      expect(isAlive(second)).toBe(true);
      supervisor.kill('SIGTERM');
      expect(await supervisor.exited).toBe(0);
      expect([isAlive(second), existsSync(pidFile)]).toEqual([false, false]);
      expect(await new Response(supervisor.stderr).text()).toContain('supervisor: the writer exited (signal SIGKILL)');
    } finally {
      supervisor.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
