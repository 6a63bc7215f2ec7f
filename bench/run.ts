import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs, type Command } from './_args';
import { compareRuns, compareText, renderCompareHtml } from './_compare';
import { headlineText } from './_headline-table';
import { machineInfo } from './_machine';
import { renderReport } from './_report-html';
import type { BenchReport, Benchmark, RunFile } from './types';

/**
 * `npm run bench [-- name ... | all] [--quick] [--events N] [--rounds N] [--seconds S] [--target URL [--allow-remote]]`
 * runs bench/<name>.ts modules (the headline when none is named) and writes
 * results/bench-<time>.json with the HTML report beside it;
 * `npm run bench -- compare A.json B.json` prints the change of every figure and writes it as HTML.
 */
let command: Command;
try {
  command = parseArgs(process.argv.slice(2));
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(2);
}
const benchDir = import.meta.dir;
const outDir = join(benchDir, 'results');

if (command.kind === 'compare') {
  const read = async (file: string) => {
    const run = (await readFile(resolve(file), 'utf8').then(JSON.parse).catch((error: Error) => {
      console.error(`${file}: ${error.message}`);
      process.exit(2);
    })) as RunFile;
    if (!Array.isArray(run?.reports)) {
      console.error(`${file} is not a bench run file (bench/results/bench-*.json)`);
      process.exit(2);
    }
    return run;
  };
  const [a, b] = await Promise.all([read(command.a), read(command.b)]);
  const runs = { a, b, aName: basename(command.a), bName: basename(command.b) };
  const rows = compareRuns(a, b);
  console.log(compareText(rows, runs));
  await mkdir(outDir, { recursive: true });
  const file = join(outDir, `compare-${basename(command.a, '.json')}-vs-${basename(command.b, '.json')}.html`);
  await writeFile(file, renderCompareHtml(rows, runs));
  console.log(`\ncomparison written to ${file}`);
  process.exit(0);
}

const { quick, options } = command;
const available = (await readdir(benchDir))
  .filter((f) => f.endsWith('.ts') && !['run.ts', 'types.ts'].includes(f) && !f.startsWith('_'))
  .map((f) => f.slice(0, -3))
  .sort();
const wanted = command.names.includes('all') ? available : command.names.length ? command.names : ['headline'];
const unknown = wanted.filter((w) => !available.includes(w));
if (unknown.length) {
  console.error(`Unknown benchmark(s): ${unknown.join(', ')}. Available: ${available.join(', ')}, or all`);
  process.exit(2);
}
if (options.target && wanted.some((w) => w !== 'headline')) {
  console.error('--target applies to the headline only: the other benches start their own servers');
  process.exit(2);
}

const machine = await machineInfo();
console.log(`${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGb} GB, ${machine.os}, Bun ${machine.bun}, DuckDB ${machine.duckdb}`);
const reports: BenchReport[] = [];
for (const name of wanted) {
  const mod = (await import(join(benchDir, `${name}.ts`))) as { default?: Benchmark };
  if (typeof mod.default !== 'function') continue;
  const tmpDir = await mkdtemp(join(tmpdir(), `bench-${name}-`));
  console.log(`\n== ${name}${quick ? ' (quick)' : ''}`);
  try {
    const report = await mod.default({ tmpDir, quick, options, log: (m) => console.log(`   ${m}`) });
    reports.push(report);
    console.log();
    if (report.headline) {
      console.log(headlineText(report.headline));
      for (const n of report.notes ?? []) console.log(`note: ${n}`);
    } else printTable(report);
  } finally {
    await rm(tmpDir, { recursive: true, force: true });
  }
}

await mkdir(outDir, { recursive: true });
const at = new Date().toISOString();
const stem = join(outDir, `bench-${at.replace(/[:.]/g, '-')}`);
const run: RunFile = { at, bun: Bun.version, command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`, machine, reports };
await writeFile(`${stem}.json`, JSON.stringify(run, null, 2));
await writeFile(`${stem}.html`, renderReport(run));
console.log(`\nresults written to ${stem}.json\nreport written to ${stem}.html`);
// autocannon's and the servers' handles may linger: the run is over.
process.exit(0);

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
