// CPU-time profile of each step of the write path (core-µs per row, every thread of the process):
// robust to a noisy machine, unlike wall-clock rates. `bun bench/_cpu.ts` (N=rows per step).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../src/storage/db';
import { migrate } from '../src/storage/migrations';
import { eventMigrations } from '../src/storage/events/tiers/schema';
import { loadSegments } from '../src/storage/events/load/flush';
import { compactHot } from '../src/storage/events/tiers/compaction';
import { encodeFrame } from '../src/storage/events/log/frames';
import { createEventGenerator } from './_events';
const N = Number(process.env.N ?? 150_000);
const dir = mkdtempSync(join(tmpdir(), 'cpu-'));
const db = await openDatabase(join(dir, 'db.duckdb'));
await migrate(db, eventMigrations);
const gen = createEventGenerator(3);
const rows = Array.from({ length: N }, gen);
const cpu = async (label: string, fn: () => Promise<unknown> | unknown) => {
  const c0 = process.cpuUsage(); const t0 = performance.now();
  await fn();
  const c = process.cpuUsage(c0); const ms = performance.now() - t0;
  const us = (c.user + c.system) / N;
  console.log(`${label.padEnd(28)} ${us.toFixed(2)} core-µs/row  wall ${(ms * 1000 / N).toFixed(2)} µs/row  (${Math.round(N / ms * 1000).toLocaleString()} rows/s)`);
};
let frames: Buffer[] = [];
await cpu('encodeFrame (1000/frame)', () => { for (let i = 0; i < N; i += 1000) frames.push(encodeFrame(rows.slice(i, i + 1000))); });
const files = [1, 2, 3].map((k) => { const f = join(dir, `s${k}.wal`); writeFileSync(f, Buffer.concat(frames).toString().replaceAll('-7', `-${k}`)); return f; });
frames = [];
const root = join(dir, 'events', 'parquet');
await cpu('load to hot', () => loadSegments(db, [files[0]], 1, { toParquet: false, root, prior: { recent: [], older: [], span: null }, now: Date.now }));
await cpu('load direct to parquet', async () => { const r = await loadSegments(db, [files[1]], 2, { toParquet: true, root, prior: { recent: [], older: [], span: null }, now: Date.now }); (globalThis as any).recent = r.files; });
await cpu('load to parquet, 1 recent', () => loadSegments(db, [files[2]], 3, { toParquet: true, root, prior: { recent: (globalThis as any).recent, older: [], span: null }, now: Date.now }));
await cpu('compact hot segment', () => compactHot(db, root, 0, 1, [], Date.now));
await cpu('checkpoint', () => db.run('CHECKPOINT'));
await cpu('delete + checkpoint', async () => { await db.run('DELETE FROM events_hot WHERE _seg <= 1'); await db.run('CHECKPOINT'); });

{
  const db2 = await openDatabase(join(dir, 'db2.duckdb'));
  await migrate(db2, eventMigrations);
  const { readLinesSql } = await import('../src/storage/events/load/line-sql');
  await cpu('pre-check uuid pass', () => db2.query(`WITH n AS MATERIALIZED (SELECT uuid FROM ${readLinesSql([files[0]])}) SELECT (SELECT count(*) - count(DISTINCT uuid) FROM n) + (SELECT count(*) FROM n SEMI JOIN events_hot h ON h.uuid = n.uuid)`));
  await cpu('anti-join only (no pre-check)', () => db2.query(`SELECT count(*) FROM ${readLinesSql([files[0]])} n WHERE NOT EXISTS (SELECT 1 FROM events_hot h WHERE h.uuid = n.uuid)`));
  await db2.close();
}
await db.close(); rmSync(dir, { recursive: true, force: true });
