import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchReport, Benchmark } from './types';

/** `bun run bench/run.ts [name ...] [--quick]`: runs bench/<name>.ts modules, writes results/. */
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const wanted = args.filter((a) => !a.startsWith('--'));
const benchDir = import.meta.dir;
const available = (await readdir(benchDir))
  .filter((f) => f.endsWith('.ts') && !['run.ts', 'types.ts'].includes(f) && !f.startsWith('_'))
  .map((f) => f.slice(0, -3))
  .sort();
const unknown = wanted.filter((w) => !available.includes(w));
if (unknown.length) {
  console.error(`Unknown benchmark(s): ${unknown.join(', ')}. Available: ${available.join(', ')}`);
  process.exit(2);
}

const reports: BenchReport[] = [];
for (const name of wanted.length ? wanted : available) {
  const mod = (await import(join(benchDir, `${name}.ts`))) as { default?: Benchmark };
  if (typeof mod.default !== 'function') continue;
  const tmpDir = await mkdtemp(join(tmpdir(), `bench-${name}-`));
  console.log(`\n== ${name}${quick ? ' (quick)' : ''}`);
  try {
    const report = await mod.default({ tmpDir, quick, log: (m) => console.log(`   ${m}`) });
    reports.push(report);
    printTable(report);
  } finally {
    await rm(tmpDir, { recursive: true, force: true });
  }
}

const outDir = join(benchDir, 'results');
await mkdir(outDir, { recursive: true });
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const file = join(outDir, `bench-${stamp}.json`);
await writeFile(file, JSON.stringify({ at: new Date().toISOString(), bun: Bun.version, reports }, null, 2));
console.log(`\nresults written to ${file}`);

function printTable(report: BenchReport) {
  const columns = [...new Set(report.rows.flatMap((r) => Object.keys(r)))];
  const cell = (v: unknown) => (typeof v === 'number' ? (Number.isInteger(v) ? v.toLocaleString('en-US') : v.toFixed(2)) : String(v ?? ''));
  const widths = columns.map((c) => Math.max(c.length, ...report.rows.map((r) => cell(r[c]).length)));
  const line = (vals: string[]) => vals.map((v, i) => v.padEnd(widths[i])).join(' | ');
  console.log(line(columns));
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
  for (const r of report.rows) console.log(line(columns.map((c) => cell(r[c]))));
  for (const n of report.notes ?? []) console.log(`note: ${n}`);
}
