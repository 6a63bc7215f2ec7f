import { describe, expect, test } from 'bun:test';
import { uuidv7 } from '../../src/ids';
import { allPages, openEventsFixture, recordStatements } from './events-fixture';

/**
 * A person's list (`distinct_id`, `person_id`) reads storage's person-clustered copies of
 * settled days, in one statement for the first pages. These check that it gives exactly what
 * the time-ordered files give: the same pages, links and counts.
 */
const DAY = 86_400_000;
const BASE = Date.parse('2024-01-06T00:00:00Z');

/** Events of dora, eli and fay over three days, interleaved. */
const events = (count: number, people = ['dora', 'eli', 'fay']) =>
  Array.from({ length: count }, (_, i) => {
    const ms = BASE + ((i * 7_919_000) % (3 * DAY)) + (i % 1000);
    return { event: i % 4 ? '$pageview' : 'signed_up', distinct_id: people[i % people.length]!, timestamp: new Date(ms), uuid: uuidv7(ms), properties: { i, plan: i % 2 ? 'pro' : 'free' } };
  });

describe('person lists from person copies', () => {
  test('the same pages, links and counts from hot rows, from time-ordered files and from person copies', async () => {
    const f = await openEventsFixture();
    try {
      await f.ingest(f.t.account.project.apiToken, events(600));
      await f.t.deps.storage.events.awaitIntake(null, null); // persons are made behind the 200
      const alice = f.t.deps.storage.persons.findByDistinctId(f.projectId, 'alice')!;
      const queries: Array<Record<string, string>> = [
        { distinct_id: 'dora' },
        { distinct_id: 'eli', limit: '7' },
        { distinct_id: 'fay', limit: '30', orderBy: '["timestamp"]' },
        { distinct_id: 'dora', event: 'signed_up', limit: '9' },
        { distinct_id: 'eli', properties: JSON.stringify([{ key: 'plan', value: 'pro' }]), limit: '11', offset: '3' },
        { distinct_id: 'dora', after: '2024-01-07T06:00:00Z', before: '2024-01-08T18:00:00Z', limit: '25' },
        { person_id: alice.uuid },
        { distinct_id: 'nobody' },
      ];
      const read = () => Promise.all(queries.map((q) => allPages(f, q)));
      const hot = await read();
      expect((hot[1]![0] as { count: number }).count).toBe(200);
      expect(hot[1]!.length).toBe(29);
      await f.t.deps.storage.events.compact();
      expect(await read()).toEqual(hot);
      expect(await f.t.deps.storage.events.buildPersonCopies()).toBeGreaterThanOrEqual(4);
      const { statements, restore } = recordStatements(f);
      const copied = await read();
      restore();
      expect(copied).toEqual(hot);
      // The rows came from the copies, one statement a page.
      const pageReads = statements.filter((s) => s.startsWith('SELECT uuid, event, distinct_id, properties, timestamp, elements_chain'));
      expect(pageReads.length).toBeGreaterThan(0);
      expect(pageReads.every((s) => s.includes('by-person'))).toBe(true);
      expect(statements.some((s) => s.startsWith('SELECT uuid, timestamp'))).toBe(false);
    } finally {
      await f.close();
    }
    // Three stores loaded and listed page by page: seconds of work on a busy 2-core machine.
  }, 30_000);

  test('PERSON_COPIES=off: no copies, the same pages', async () => {
    const f = await openEventsFixture({ PERSON_COPIES: 'off' });
    try {
      await f.ingest(f.t.account.project.apiToken, events(60));
      const before = await allPages(f, { distinct_id: 'dora', limit: '8' });
      await f.t.deps.storage.events.compact();
      expect(await f.t.deps.storage.events.buildPersonCopies()).toBe(0);
      const { statements, restore } = recordStatements(f);
      expect(await allPages(f, { distinct_id: 'dora', limit: '8' })).toEqual(before);
      restore();
      expect(statements.some((s) => s.includes('by-person'))).toBe(false);
    } finally {
      await f.close();
    }
  });

  test('deep pages (keys first) give the same rows with copies', async () => {
    const f = await openEventsFixture();
    try {
      await f.ingest(f.t.account.project.apiToken, events(1_100, ['gus']));
      const query = { distinct_id: 'gus', offset: '1010', limit: '50' };
      await f.t.deps.storage.events.compact();
      const files = await f.list(query);
      expect(files.body.results.length).toBe(50);
      expect(files.body.count).toBe(1_100);
      await f.t.deps.storage.events.buildPersonCopies();
      const { statements, restore } = recordStatements(f);
      const copied = await f.list(query);
      restore();
      expect(copied.body).toEqual(files.body);
      const keyReads = statements.filter((s) => s.startsWith('SELECT uuid, timestamp, distinct_id'));
      expect(keyReads.length).toBeGreaterThan(0);
      const fetch = statements.find((s) => s.startsWith('SELECT uuid, event, distinct_id, properties, timestamp, elements_chain'))!;
      expect(fetch).toContain('by-person');
      expect(fetch).toMatch(/distinct_id IN \(/);
    } finally {
      await f.close();
    }
  });
});
