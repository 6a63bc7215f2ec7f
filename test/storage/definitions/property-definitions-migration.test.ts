import { afterAll, expect, test } from 'bun:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../../src/storage/db';
import { migrate } from '../../../src/storage/migrations';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** Run migrate-child.ts on a fresh file and kill it (-9) once it has migrated: the file then holds only a log. */
async function migrateAndKill(upTo?: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'migrations-'));
  dirs.push(dir);
  const path = join(dir, 'db.duckdb');
  const child = Bun.spawn([process.execPath, join(import.meta.dir, 'migrate-child.ts'), path, ...(upTo ? [String(upTo)] : [])], { stdout: 'pipe', stderr: 'pipe' });
  const reader = child.stdout.getReader();
  let out = '';
  while (!out.includes('MIGRATED')) {
    const chunk = await reader.read();
    if (chunk.done) throw new Error(`migration child exited: ${await new Response(child.stderr).text()}`);
    out += new TextDecoder().decode(chunk.value);
  }
  child.kill(9);
  await child.exited;
  return path;
}

test('a server killed right after migrating opens its database again (the log replays)', async () => {
  const db = await openDatabase(await migrateAndKill(), { readers: 1 });
  try {
    expect(await migrate(db)).toEqual([]);
  } finally {
    await db.close();
  }
}, 30_000);

test('property definitions recorded before types were: each gets an id, numeric ones their type', async () => {
  const db = await openDatabase(await migrateAndKill(300), { readers: 1 });
  try {
    await migrate(db);
    const rows = await db.query<{ id: string; name: string; property_type: string | null; tags: string }>(
      'SELECT id::VARCHAR AS id, name, property_type, tags FROM property_definitions ORDER BY name',
    );
    expect(rows).toEqual([
      { id: expect.stringMatching(/^[0-9a-f-]{36}$/), name: 'n', property_type: 'Numeric', tags: '[]' },
      { id: expect.stringMatching(/^[0-9a-f-]{36}$/), name: 's', property_type: null, tags: '[]' },
    ]);
    expect(rows[0]!.id).not.toBe(rows[1]!.id);
  } finally {
    await db.close();
  }
}, 30_000);
