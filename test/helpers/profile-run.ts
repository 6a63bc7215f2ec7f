import { join } from 'node:path';
import { ROOT } from './server-process';

/** What a child `bun test` of a profile printed, and its totals (`count('pass')`, `count('skip')`…). */
export interface ProfileRun {
  output: string;
  count(word: 'pass' | 'fail' | 'skip'): number;
}

/**
 * API suites run once more in a child `bun test` under a storage profile (`env`, read by
 * test/helpers/test-app.ts); throws with the child's output, its passes left out, when any fails.
 */
export async function runProfile(name: string, suites: readonly string[], env: Record<string, string>): Promise<ProfileRun> {
  const child = Bun.spawn([process.execPath, 'test', '--timeout', '30000', ...suites.map((s) => join(ROOT, s))], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  const output = out + err;
  const count = (word: string) => Number(new RegExp(`^\\s*(\\d+) ${word}$`, 'm').exec(output)?.[1] ?? 0);
  if (code !== 0 || count('fail') > 0) throw new Error(`the ${name} profile failed (exit ${code}):\n${output.split('\n').filter((l) => !l.startsWith('(pass)')).join('\n').slice(-20_000)}`);
  return { output, count };
}
