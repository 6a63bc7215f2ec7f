import { expect, test } from 'bun:test';
import { openDatabase } from '../../../src/storage/db';
import { MIGRATIONS, migrate } from '../../../src/storage/migrations';

test('property definitions recorded before types were: each gets an id, numeric ones their type', async () => {
  const db = await openDatabase(':memory:', { readers: 1 });
  try {
    await migrate(db, MIGRATIONS.filter((m) => m.version <= 300));
    await db.run(`INSERT INTO property_definitions (team_id, name, kind, is_numerical, created_at) VALUES (1, 'n', 'event', true, now()), (1, 's', 'event', false, now())`);
    await migrate(db);
    const rows = await db.query<{ id: string; name: string; property_type: string | null; tags: string }>(
      'SELECT id::VARCHAR AS id, name, property_type, tags FROM property_definitions ORDER BY name',
    );
    expect(rows).toEqual([
      { id: expect.stringMatching(/^[0-9a-f-]{36}$/), name: 'n', property_type: 'Numeric', tags: '[]' },
      { id: expect.stringMatching(/^[0-9a-f-]{36}$/), name: 's', property_type: null, tags: '[]' },
    ]);
    expect(rows[0].id).not.toBe(rows[1].id);
  } finally {
    await db.close();
  }
});
