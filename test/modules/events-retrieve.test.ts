import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { uuidv7 } from '../../src/ids';
import { errorOf, NOT_FOUND } from '../helpers/test-app';
import { byKey, eventObject, NOW, openEventsFixture, type EventsFixture } from './events-fixture';

let f: EventsFixture;
beforeAll(async () => {
  f = await openEventsFixture();
});
afterAll(() => f.close());

const eventPath = (id: string, project = f.projectId) => `/api/projects/${project}/events/${id}/`;

describe('GET /events/:id/', () => {
  test('one event; person only with include_person=true', async () => {
    const a3 = byKey('a3');
    expect((await f.t.json('GET', eventPath(a3.uuid))).body).toEqual(eventObject(a3, null));
    expect((await f.t.json('GET', `${eventPath(a3.uuid)}?include_person=true`)).body).toEqual(eventObject(a3));
  });

  test('format=csv: a header row (the event flattened, as the export names its columns) and the event\'s row', async () => {
    const a4 = byKey('a4');
    const res = await f.t.call('GET', `${eventPath(a4.uuid)}?format=csv&include_person=true`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(await res.text()).toBe(
      'distinct_id,elements_chain,event,id,person.distinct_ids.0,person.is_identified,person.properties.email,person.properties.name,person.properties.username,' +
        'properties.plan,properties.price,"properties.quote""d,key",timestamp\r\n' +
        `bob,,signup,${a4.uuid},bob,false,,,,free,25.5,"a,""b""\nc",2024-01-08T12:00:00+00:00\r\n`,
    );
    // Without include_person the person columns are empty, as `person` is null in JSON.
    const a5 = byKey('a5');
    expect(await (await f.t.call('GET', `${eventPath(a5.uuid)}?format=csv`)).text()).toBe(
      'distinct_id,elements_chain,event,id,person.distinct_ids.0,person.is_identified,person.properties.email,person.properties.name,person.properties.username,' +
        'properties.nested,properties.plan,properties.price,properties.tags,timestamp\r\n' +
        `bob,,purchase,${a5.uuid},,,,,,"{""deep"":true}",pro,100,"[""x"",""y""]",2024-01-09T12:00:00+00:00\r\n`,
    );
    // format=json is the default's object; another format is refused as the list refuses it.
    expect((await f.t.json('GET', `${eventPath(a5.uuid)}?format=json`)).body).toEqual(eventObject(a5, null));
    const bad = await f.t.json('GET', `${eventPath(a5.uuid)}?format=xml`);
    expect(bad).toMatchObject({ status: 400, body: errorOf('invalid_choice', 'validation_error', '"xml" is not a valid choice: use csv or json.', 'format') });
  });

  test('the id may be upper case or without dashes', async () => {
    const a4 = byKey('a4');
    expect((await f.t.json('GET', eventPath(a4.uuid.toUpperCase()))).body.id).toBe(a4.uuid);
    expect((await f.t.json('GET', eventPath(a4.uuid.replace(/-/g, '')))).body.id).toBe(a4.uuid);
  });

  test('a non-v7 uuid (no embedded time) is found by a full lookup', async () => {
    const e = { event: 'v4', distinct_id: 'x', timestamp: new Date(NOW.getTime() - 40 * 86_400_000), properties: {}, uuid: crypto.randomUUID() };
    await f.ingest(f.t.account.project.apiToken, [e]);
    expect((await f.t.json('GET', eventPath(e.uuid))).body.event).toBe('v4');
  });

  test('a v7 uuid whose time is far from the event time is still found', async () => {
    const e = { event: 'skewed', distinct_id: 'x', timestamp: new Date(NOW.getTime() - 20 * 86_400_000), properties: {}, uuid: uuidv7(NOW.getTime()) };
    await f.ingest(f.t.account.project.apiToken, [e]);
    expect((await f.t.json('GET', eventPath(e.uuid))).body.event).toBe('skewed');
  });

  test('a malformed id is a 400 naming id', async () => {
    for (const id of ['nope', '1', "x' OR 1=1 --"]) {
      const res = await f.t.json('GET', eventPath(encodeURIComponent(id)));
      expect(res.status).toBe(400);
      expect(res.body).toEqual(errorOf('invalid_input', 'validation_error', 'Invalid UUID', 'id'));
    }
  });

  test('an unknown id is a 404 naming it; another project’s event is unknown here', async () => {
    const missing = uuidv7();
    const res = await f.t.json('GET', eventPath(missing));
    expect(res.status).toBe(404);
    expect(res.body).toEqual(errorOf('not_found', 'invalid_request', `No events exist for event UUID ${missing}`));
    expect((await f.t.json('GET', eventPath(byKey('b1').uuid))).status).toBe(404);
    expect((await f.t.json('GET', eventPath(byKey('c1').uuid))).status).toBe(404);
    expect((await f.t.json('GET', eventPath(byKey('c1').uuid, f.projectC))).body.id).toBe(byKey('c1').uuid);
    expect((await f.t.json('GET', eventPath(byKey('b1').uuid, f.other.projectId))).body).toEqual(NOT_FOUND);
  });
});

describe('GET /events/values/', () => {
  const values = async (query: string) => {
    const res = await f.t.json('GET', `/api/projects/${f.projectId}/events/values/?${query}`);
    expect(res.status).toBe(200);
    return res.body;
  };

  test.each([
    ['distinct values, most frequent first', 'key=plan', ['pro', 'enterprise', 'free']],
    ['a case-insensitive substring', 'key=plan&value=PR', ['pro', 'enterprise']],
    ['only some events', 'key=plan&event_name=signup&event_name=%24pageview', ['enterprise', 'free', 'pro']],
    ['numbers as text', 'key=price', ['10', '100', '25.5']],
    ['a list contributes its elements', 'key=tags', ['x', 'y']],
    ['an object is its JSON text', 'key=nested', ['{"deep":true}']],
    ['a hot property (materialized column)', 'key=%24current_url', ['https://example.com/a', 'https://example.com/b']],
    ['custom_event: event names but the built-in ones', 'key=custom_event', ['purchase', 'signup']],
    ['an unknown key', 'key=nope', []],
    ['a hostile key', `key=${encodeURIComponent("x') OR 1=1 --")}`, []],
    ['no key', '', []],
  ])('%s', async (_name, query, expected) => {
    expect(await values(query)).toEqual(expected.map((name) => ({ name })));
  });

  test("another project's values are not listed", async () => {
    expect(await values('key=secret')).toEqual([]);
    expect((await values('key=plan')).map((v: { name: string }) => v.name)).not.toContain('other-project');
  });
});
