import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisClient } from 'bun';
import { PostHog } from 'posthog-node-5';
import posthogJsPackage from 'posthog-js/package.json';
import { launchChromium, newDesktopContext, servePages } from '../helpers/browser';
import { missingEngines } from '../../src/cli/cluster/engines';
import { isAlive, isRunning, type ClusterState } from '../../src/cli/cluster/processes';
import { withCurrentWriters } from '../../src/cli/cluster/up';
import { RUNTIME_ENV } from '../../src/runtime-env';
import { LOG_PARTITIONS, partitionOf } from '../../src/storage/log/redis-streams';
import { chQuery, cluster, eventually, listedIds, shardUrls, summaryOf, type UpSummary } from '../helpers/cluster';
import { TEST_KEYS } from '../helpers/server-process';

/**
 * The local cluster as an operator starts it (`npm run cluster -- up`), black-box: two nodes, one
 * writer, Redis, PostgreSQL and two ClickHouse shards, each a process of its own. What is captured
 * at one node is in ClickHouse; what is changed through one node's API is served by the other;
 * a writer killed outright is started again by its supervisor and loses and duplicates nothing
 * acknowledged; `down` stops every process.
 */
const missing = missingEngines();
const run = missing.length ? describe.skip : describe;
const SKIP = missing.length ? ` (skipped: missing ${missing.join('; ')})` : '';

run(`npm run cluster: two nodes, writers, Redis, PostgreSQL, two ClickHouse shards${SKIP}`, () => {
  let dir: string;
  let up: UpSummary;
  let shards: string[];
  let down: { code: number; stdout: string; stderr: string } | null = null;

  const count = async () => Number(await chQuery(shards[0]!, `SELECT count() FROM events FINAL WHERE team_id = ${up.project_id}`));

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hogbase-cluster-'));
    const started = await cluster('up', dir);
    if (started.code !== 0) throw new Error(`cluster up failed (${started.code}): ${started.stderr}`);
    up = summaryOf(started.stdout);
    const state = JSON.parse(readFileSync(join(dir, 'cluster.json'), 'utf8')) as ClusterState;
    shards = shardUrls(dir);
    expect(state.env.EVENTS_STORE).toContain(shards[0]!.replace('http://', '@'));
  }, 120_000);

  afterAll(async () => {
    // Whatever a failed test left: every process up started, stopped by PID.
    if (dir && !down) await cluster('down', dir);
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  test('up prints the nodes, the bootstrap keys and the PIDs of every role', () => {
    expect(up.nodes).toHaveLength(2);
    expect(up.project_api_key).toBe(TEST_KEYS.project);
    expect(up.personal_api_key).toBe(TEST_KEYS.personal);
    expect(Object.fromEntries(Object.entries(up.pids).map(([role, pids]) => [role, pids.length]))).toEqual({ nodes: 2, writers: 1, supervisors: 1, clickhouse: 2, postgres: 1, redis: 1 });
    for (const pid of Object.values(up.pids).flat()) expect(isAlive(pid)).toBe(true);
    // Nodes and writers run with what `npm start` sets (a writer's PID is its supervisor's child's).
    for (const pid of [...up.pids.nodes, ...up.pids.writers]) {
      const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      for (const [name, value] of Object.entries(RUNTIME_ENV)) expect(env).toContain(`${name}=${value}`);
    }
  });

  test('posthog-node captures at node A (/batch/, gzip) and /capture/ takes one event; both reach ClickHouse, on both shards', async () => {
    const [a] = up.nodes;
    const client = new PostHog(up.project_api_key, { host: a, flushAt: 20, flushInterval: 0 });
    for (let i = 0; i < 12; i++) client.capture({ distinctId: `sdk-user-${i}`, event: 'sdk event', properties: { i, plan: 'pro' } });
    await client.shutdown();
    const single = await fetch(`${a}/capture/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ api_key: up.project_api_key, event: 'single', distinct_id: 'capture-user', properties: { $browser: 'Firefox' } }),
    });
    expect([single.status, await single.json()]).toEqual([200, { status: 1 }]);
    expect(await eventually(count, (n) => n >= 13, 30_000)).toBe(13);
    const rows = await chQuery(shards[0]!, `SELECT event, distinct_id, JSONExtractString(properties, 'plan') FROM events FINAL WHERE team_id = ${up.project_id} ORDER BY distinct_id`).catch(() =>
      // 18.16 has no JSONExtract: visitParam reads the same flat key.
      chQuery(shards[0]!, `SELECT event, distinct_id, visitParamExtractString(properties, 'plan') FROM events FINAL WHERE team_id = ${up.project_id} ORDER BY distinct_id`),
    );
    expect(rows.split('\n')).toEqual(['single\tcapture-user\t', ...Array.from({ length: 12 }, (_, i) => `sdk event\tsdk-user-${i}\tpro`).sort()]);
    // Sharded by distinct id: each server holds some, together all, once.
    const perShard = await Promise.all(shards.map(async (s) => Number(await chQuery(s, `SELECT count() FROM events_shard FINAL WHERE team_id = ${up.project_id}`))));
    expect(perShard.every((n) => n > 0)).toBe(true);
    expect(perShard[0]! + perShard[1]!).toBe(13);
    // Node B lists what node A captured: its events API reads ClickHouse (EVENTS_STORE), across both shards.
    const listed = await fetch(`${up.nodes[1]}/api/projects/${up.project_id}/events/?limit=100`, { headers: { authorization: `Bearer ${up.personal_api_key}` } });
    const page = (await listed.json()) as { count: number; results: Array<{ event: string; distinct_id: string }> };
    expect(listed.status).toBe(200);
    expect(page.count).toBe(13);
    expect(page.results.map((e) => `${e.event}/${e.distinct_id}`).sort()).toEqual(['single/capture-user', ...Array.from({ length: 12 }, (_, i) => `sdk event/sdk-user-${i}`)].sort());
  }, 60_000);

  test("a batch naming two people of different log partitions: each person's events in their partition, node B lists every one once", async () => {
    const [a, b] = up.nodes;
    const ann = 'split-ann';
    const bob = Array.from({ length: 50 }, (_, i) => `split-bob-${i}`).find((id) => partitionOf(up.project_id, id, LOG_PARTITIONS) !== partitionOf(up.project_id, ann, LOG_PARTITIONS))!;
    const batch = [0, 1, 2, 3, 4, 5].map((i) => ({ event: 'split', distinct_id: i % 2 ? bob : ann, properties: { i } }));
    const sent = await fetch(`${a}/batch/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: up.project_api_key, batch }) });
    expect([sent.status, await sent.json()]).toEqual([200, { status: 1 }]);
    // Each person's part is an entry of their partition's stream (trimming keeps a stream's last delivered entry).
    const redis = new RedisClient(JSON.parse(readFileSync(join(dir, 'cluster.json'), 'utf8')).env.EVENT_LOG);
    try {
      const bodies = async (id: string) => {
        const entries = (await redis.send('XRANGE', [`hogbase:log:${partitionOf(up.project_id, id, LOG_PARTITIONS)}`, '-', '+'])) as Array<[string, string[]]>;
        return entries.map(([, fields]) => fields[fields.indexOf('body') + 1]!).filter((body) => body.includes('"split"'));
      };
      expect([await bodies(ann), await bodies(bob)]).toEqual([[JSON.stringify([batch[0], batch[2], batch[4]])], [JSON.stringify([batch[1], batch[3], batch[5]])]]);
    } finally {
      redis.close();
    }
    const listed = async () => {
      const res = await fetch(`${b}/api/projects/${up.project_id}/events/?event=split&limit=100`, { headers: { authorization: `Bearer ${up.personal_api_key}` } });
      return ((await res.json()) as { results: Array<{ distinct_id: string; properties: { i: number } }> }).results;
    };
    const page = await eventually(listed, (r) => r.length >= 6, 30_000);
    expect(page.map((e) => `${e.distinct_id}/${e.properties.i}`).sort()).toEqual([`${ann}/0`, `${ann}/2`, `${ann}/4`, `${bob}/1`, `${bob}/3`, `${bob}/5`].sort());
  }, 60_000);

  test("a person property set at node A filters node B's events list: the writer copies persons beside the events", async () => {
    const [a, b] = up.nodes;
    const batch = [
      { event: 'tiered', distinct_id: 'gold-user', properties: { $set: { tier: 'gold' } } },
      { event: 'tiered', distinct_id: 'plain-user', properties: { $set: { tier: 'plain' } } },
    ];
    const sent = await fetch(`${a}/batch/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: up.project_api_key, batch }) });
    expect(sent.status).toBe(200);
    const gold = async () => {
      const query = new URLSearchParams({ event: 'tiered', properties: JSON.stringify([{ key: 'tier', value: 'gold', type: 'person' }]) });
      const res = await fetch(`${b}/api/projects/${up.project_id}/events/?${query}`, { headers: { authorization: `Bearer ${up.personal_api_key}` } });
      const body = (await res.json()) as { results?: Array<{ distinct_id: string }> };
      return `${res.status} ${(body.results ?? []).map((e) => e.distinct_id).join(',')}`;
    };
    expect(await eventually(gold, (answer) => answer === '200 gold-user', 30_000)).toBe('200 gold-user');
  }, 60_000);

  test("a flag created through node B's private API answers on node A's /decide/", async () => {
    const [a, b] = up.nodes;
    const created = await fetch(`${b}/api/projects/${up.project_id}/feature_flags/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${up.personal_api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ key: 'cluster-flag', filters: { groups: [{ properties: [], rollout_percentage: 100 }] } }),
    });
    expect(created.status).toBe(201);
    const decide = async () => (await (await fetch(`${a}/decide/?v=3`, { method: 'POST', body: JSON.stringify({ token: up.project_api_key, distinct_id: 'sdk-user-1' }) })).json()) as { featureFlags: Record<string, unknown> };
    expect((await eventually(decide, (r) => r.featureFlags['cluster-flag'] === true, 5_000)).featureFlags).toEqual({ 'cluster-flag': true });
  }, 30_000);

  test('posthog-js in Chromium sends to node A; node B lists its events and decides flags (posthog-js and posthog-node) from the person it set', async () => {
    const [a, b] = up.nodes;
    const flag = { key: 'cluster-enterprise', filters: { groups: [{ properties: [{ key: 'plan', value: ['enterprise'], operator: 'exact', type: 'person' }], rollout_percentage: 100 }] } };
    const created = await fetch(`${b}/api/projects/${up.project_id}/feature_flags/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${up.personal_api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify(flag),
    });
    expect(created.status).toBe(201);
    const userId = 'cluster-browser-user';
    // Page A identifies through node A; page B only says who it is (bootstrap, no properties), so
    // posthog-js cannot send the plan along with its flags request: node B has to know the person.
    const page = (host: string, extra: Record<string, unknown>) => `<!doctype html><html><head><title>cluster shop</title><script src="/array.full.js"></script><script>
window.__flags = null;
posthog.init(${JSON.stringify(up.project_api_key)}, ${JSON.stringify({ api_host: host, request_batching: false, autocapture: false, capture_pageleave: false, disable_session_recording: true, disable_surveys: true, ...extra })});
posthog.onFeatureFlags(function (flags, variants) { window.__flags = { distinctId: posthog.get_distinct_id(), variants: variants }; });
</script></head><body>shop</body></html>`;
    const pages = servePages({
      '/a.html': page(a!, {}),
      '/b.html': page(b!, { bootstrap: { distinctID: userId, isIdentifiedID: true } }),
    });
    const browser = await launchChromium();
    try {
      const context = await newDesktopContext(browser);
      const onA = await context.newPage();
      await onA.goto(`${pages.origin}/a.html`, { waitUntil: 'load', timeout: 15_000 });
      const anonId: string = await onA.evaluate(() => (globalThis as any).posthog.get_distinct_id());
      await onA.evaluate(() => (globalThis as any).posthog.capture('cluster browser event', { color: 'red', count: 3, nested: { ok: true } }));
      await onA.evaluate((id) => (globalThis as any).posthog.identify(id, { plan: 'enterprise', email: 'browser@example.com' }), userId);
      await onA.evaluate(() => (globalThis as any).posthog.capture('cluster after identify', { step: 2 }));

      // Node B lists what posthog-js sent to node A, with the properties it sent.
      type Listed = { count: number; results: Array<{ event: string; distinct_id: string; properties: Record<string, any> }> };
      const listed = async (distinctId: string) =>
        (await (await fetch(`${b}/api/projects/${up.project_id}/events/?distinct_id=${distinctId}&limit=100`, { headers: { authorization: `Bearer ${up.personal_api_key}` } })).json()) as Listed;
      const anon = await eventually(() => listed(anonId), (p) => p.results.length >= 2, 30_000);
      const user = await eventually(() => listed(userId), (p) => p.results.some((e) => e.event === 'cluster after identify'), 30_000);
      expect(anon.results.map((e) => e.event).sort()).toEqual(['$pageview', 'cluster browser event']);
      const custom = anon.results.find((e) => e.event === 'cluster browser event')!;
      expect(custom.properties).toMatchObject({ color: 'red', count: 3, nested: { ok: true }, $lib: 'web', $lib_version: posthogJsPackage.version, $current_url: `${pages.origin}/a.html`, $browser: 'Chrome' });
      const identify = user.results.find((e) => e.event === '$identify')!;
      expect(identify.properties).toMatchObject({ $anon_distinct_id: anonId, $set: { plan: 'enterprise', email: 'browser@example.com' } });

      // posthog-node asks node B, with no person properties of its own: B reads the person the writer stored.
      const client = new PostHog(up.project_api_key, { host: b, flushAt: 1, flushInterval: 0 });
      try {
        expect(await eventually(() => client.getFeatureFlag(flag.key, userId), (v) => v === true, 30_000)).toBe(true);
        expect(await client.getFeatureFlag(flag.key, 'cluster-browser-stranger')).toBe(false);
      } finally {
        await client.shutdown();
      }

      // posthog-js on a page that talks only to node B: the flag is on for the person set through A.
      const onB = await context.newPage();
      await onB.goto(`${pages.origin}/b.html`, { waitUntil: 'load', timeout: 15_000 });
      await onB.waitForFunction(() => (globalThis as any).__flags !== null, undefined, { timeout: 15_000 });
      expect(await onB.evaluate(() => (globalThis as any).__flags)).toMatchObject({ distinctId: userId, variants: { [flag.key]: true } });
      await context.close();
      // Everything posthog-js sent is in before the next test counts events: B's $pageview too.
      await eventually(() => listed(userId), (p) => p.results.filter((e) => e.event === '$pageview').length === 1, 30_000);
    } finally {
      await browser.close();
      pages.stop();
    }
  }, 90_000);

  test('kill -9 of the writer during a load, nothing done after: its supervisor starts it again, and node B lists every acknowledged event once', async () => {
    const before = await count();
    const BATCHES = 80;
    const PER_BATCH = 50;
    let acknowledged = 0;
    let sent = 0;
    const send = async (n: number) => {
      // Both nodes; 40 people, so every partition (and both shards) gets some; no client uuids: the writer names events from their log ids.
      const batch = Array.from({ length: PER_BATCH }, (_, i) => ({ event: 'load', distinct_id: `load-${(n * PER_BATCH + i) % 40}`, properties: { n, i } }));
      const answer = await fetch(`${up.nodes[n % 2]}/batch/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: up.project_api_key, batch }) });
      if (answer.status === 200) acknowledged += PER_BATCH;
      sent++;
    };
    let killed!: () => void;
    const afterKill = new Promise<void>((resolve) => (killed = resolve));
    const load = (async () => {
      // Four requests in flight; the last quarter only once the writer is dead, so the load goes on across the kill.
      let next = 0;
      await Promise.all(Array.from({ length: 4 }, async () => {
        while (next < BATCHES) {
          const n = next++;
          if (n >= BATCHES * 0.75) await afterKill;
          await send(n);
        }
      }));
    })();
    // Killed as soon as it has written some of the load, with more of it still coming.
    await eventually(count, (n) => n > before, 30_000);
    const [writer] = up.pids.writers;
    process.kill(writer!, 'SIGKILL');
    const sentAtKill = sent;
    killed();
    await load;
    expect(acknowledged).toBe(BATCHES * PER_BATCH);
    // The supervisor starts another writer (after 1 s); it takes the dead one's partitions when their
    // leases run out (15 s) and processes their unacknowledged entries first. Asked of the API alone.
    const listed = await eventually(() => listedIds(up.nodes[1]!, up, 'load'), (ids) => ids.length >= acknowledged, 90_000);
    expect(listed.length).toBe(acknowledged);
    // Once each: the events the dead writer had inserted but not acknowledged were named the same the second time.
    expect(new Set(listed).size).toBe(acknowledged);
    const [uuids, rows] = (await chQuery(shards[0]!, `SELECT uniqExact(uuid), count() FROM events WHERE team_id = ${up.project_id} AND event = 'load'`)).split('\t').map(Number);
    expect(uuids).toBe(acknowledged);
    // The writer that runs now, as `down` will find it: another process under the same supervisor.
    const state = withCurrentWriters(dir, JSON.parse(readFileSync(join(dir, 'cluster.json'), 'utf8')) as ClusterState);
    expect(state.pids.writers.map((w) => w.pid)).not.toEqual([writer]);
    expect(state.pids.writers.every(isRunning)).toBe(true);
    up.pids.writers = state.pids.writers.map((w) => w.pid);
    expect(readFileSync(join(dir, 'logs', 'writer-0.log'), 'utf8')).toContain('supervisor: the writer exited (signal SIGKILL)');
    console.log(`[cluster] killed after ${sentAtKill}/${BATCHES} batches sent; ${rows! - uuids!} rows written twice, read once`);
  }, 150_000);

  test('add-writer starts one more writer under its own supervisor; the summary lists both, each running', async () => {
    const added = await cluster('add-writer', dir);
    expect(added.code).toBe(0);
    const summary = summaryOf(added.stdout);
    expect([summary.pids.writers.length, summary.pids.supervisors.length]).toEqual([2, 2]);
    // The first writer as its supervisor started it again after the kill above.
    expect(summary.pids.writers[0]).toBe(up.pids.writers[0]!);
    for (const pid of [...summary.pids.writers, ...summary.pids.supervisors]) expect(isAlive(pid)).toBe(true);
    up.pids = summary.pids;
  }, 90_000);

  test('down stops every process up, add-writer and the supervisors started, by PID', async () => {
    down = await cluster('down', dir);
    expect(down.code).toBe(0);
    // Each PID with the program it was started as: a PID freed earlier (the killed writer's) may be another program's by now.
    const state = JSON.parse(readFileSync(join(dir, 'cluster.json'), 'utf8')) as ClusterState;
    const started = Object.values(state.pids).flat();
    expect(started.map((p) => p.pid).sort()).toEqual(Object.values(up.pids).flat().sort());
    expect(started.filter(isRunning)).toEqual([]);
  }, 120_000);
});
