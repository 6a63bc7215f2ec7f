import { expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { headlineText, phasesOf } from '../../bench/_headline-table';
import { renderReport } from '../../bench/_report-html';
import type { RunFile } from '../../bench/types';

const fixture = (name: string): RunFile => JSON.parse(readFileSync(join(import.meta.dir, '../fixtures/bench', name), 'utf8'));
const a = fixture('run-a.json');
const b = fixture('run-b.json');

/** The cells of every row of the first table with `class`, tags stripped. */
function tableRows(html: string, cls: string): string[][] {
  const table = new RegExp(`<table class="${cls}">([\\s\\S]*?)</table>`).exec(html)![1];
  return [...table.matchAll(/<tr[^>]*>([\s\S]*?)<\/tr>/g)].map((row) => [...row[1].matchAll(/<t[hd][^>]*>([\s\S]*?)<\/t[hd]>/g)].map((c) => c[1]));
}

test('the headline table of the report: each section, then its figures next to the baselines', () => {
  expect(tableRows(renderReport(a), 'headline')).toEqual([
    ['Figure', 'hogbase', 'spread (min–max)', 'bare Bun.serve', 'durable floor', 'hogbase / floor'],
    ['Single-event capture (POST /capture/, 64 connections)'],
    ['acknowledged', '11,000 events/s', '10,000–12,000 (3 rounds)', '42,000 events/s', '21,000 events/s', '0.52×'],
    ['queryable', '10,000 events/s', '9,000–11,000 (3 rounds)', '', '', ''],
    ['p99 latency', '60.0 ms', '50.0–70.0 (3 rounds)', '12.0 ms', '22.0 ms', '2.73×'],
    ['1 MB batches (POST /batch/, 4 connections)'],
    ['acknowledged', '30,500 events/s', '30,000–31,000 (3 rounds)', '310,000 events/s', '160,000 events/s', '0.19×'],
    ['Events list on 1,000 events (GET /api/projects/:id/events/)'],
    ['latest 100', '44.0 ms', '40.0–48.0 (5 rounds)', '', '', ''],
    ['a person&#39;s events (distinct_id)', '100 ms', '90.0–110 (3 rounds)', '', '', ''],
    ['Disk'],
    ['DATA_DIR per million events', '400 MiB', '400 (1 round)', '', '', ''],
  ]);
});

test('the report names the machine, the server and the size of the run', () => {
  const dl = /<dl class="machine">([\s\S]*?)<\/dl>/.exec(renderReport(a))![1];
  expect([...dl.matchAll(/<dt>([^<]*)<\/dt><dd>([^<]*)<\/dd>/g)].map((m) => [m[1], m[2]])).toEqual([
    ['CPU', 'Test CPU 9000, 2 cores'],
    ['Memory', '23.5 GB'],
    ['OS', 'Debian GNU/Linux 12 (bookworm) (linux 6.1.0)'],
    ['Bun', '1.4.4'],
    ['DuckDB', 'v1.5.5'],
    ['Durability', 'durable'],
    ['Server', 'spawned by the bench on loopback (hogbase 0.1.0)'],
    ['Size', '1,000 generated events for the events list and exports; 3 rounds of 3 s per load case (quick)'],
  ]);
});

test('the charts are inline SVG: throughput and latency bars, memory and CPU lines over shaded phases', () => {
  const html = renderReport(a);
  const titles = [...html.matchAll(/<svg [^>]*aria-label="([^"]*)"/g)].map((m) => m[1]);
  expect(titles).toEqual([
    'Throughput next to the baselines of the same run',
    'Latency percentiles of hogbase (medians over rounds)',
    'The server&#39;s resident memory over the run',
    'Other processes&#39; CPU over the run',
  ]);
  // 4 + 2 throughput bars (the unmeasured one drawn empty), 2 × 3 percentiles.
  expect(html.match(/<rect class="bar"/g)?.length).toBe(12);
  expect(html).toContain('not measured');
  // RSS: one line; CPU: two, broken where a sample had no reading.
  expect(html.match(/<polyline class="series"/g)?.length).toBe(3);
  expect(html.match(/<rect class="phase"/g)?.length).toBe(4);
  expect(phasesOf(a.reports[0].headline!.timeline)).toEqual([
    { from: 0, to: 2, label: 'capture single' },
    { from: 2, to: 3.5, label: '1 MB batches' },
  ]);
});

test('the report is self-contained: no script, no stylesheet or image from anywhere, text escaped', () => {
  const html = renderReport(a);
  expect(html).not.toContain('<script');
  expect(html).not.toMatch(/<link|<img|@import|url\(/);
  expect([...new Set(html.match(/https?:\/\/[^"'\s<)]+/g))]).toEqual(['http://www.w3.org/2000/svg']);
  expect(html).toContain('<li>a note with &lt;markup&gt; &amp; &quot;quotes&quot;</li>');
  // Other benches' rows follow as their own tables.
  expect(html).toContain('<h2>ingest</h2>');
  expect(html).toContain('<td>POST /batch/ ~1 MB [autocannon]</td><td>hogbase durable</td><td class="num">40,000</td><td>');
});

test('a busy machine is a warning at the top of the report, and none when it was quiet', () => {
  expect(renderReport(a)).not.toContain('role="alert"');
  expect(renderReport(b)).toContain('<p class="warning" role="alert">The machine was busy: other processes used 0.9 of 2 cores on average (peak 1.6; most during capture single: 1.2).</p>');
});

test('the terminal table of the headline', () => {
  expect(headlineText(a.reports[0].headline!)).toBe(EXPECTED_A);
});

const EXPECTED_A = `Measured                                                    | Figure                          | hogbase         | spread (min–max)         | bare Bun.serve   | durable floor    | hogbase / floor
------------------------------------------------------------|---------------------------------|-----------------|--------------------------|------------------|------------------|----------------
Single-event capture (POST /capture/, 64 connections)       | acknowledged                    | 11,000 events/s | 10,000–12,000 (3 rounds) | 42,000 events/s  | 21,000 events/s  | 0.52×
                                                            | queryable                       | 10,000 events/s | 9,000–11,000 (3 rounds)  |                  |                  |
                                                            | p99 latency                     | 60.0 ms         | 50.0–70.0 (3 rounds)     | 12.0 ms          | 22.0 ms          | 2.73×
1 MB batches (POST /batch/, 4 connections)                  | acknowledged                    | 30,500 events/s | 30,000–31,000 (3 rounds) | 310,000 events/s | 160,000 events/s | 0.19×
Events list on 1,000 events (GET /api/projects/:id/events/) | latest 100                      | 44.0 ms         | 40.0–48.0 (5 rounds)     |                  |                  |
                                                            | a person's events (distinct_id) | 100 ms          | 90.0–110 (3 rounds)      |                  |                  |
Disk                                                        | DATA_DIR per million events     | 400 MiB         | 400 (1 round)            |                  |                  |
other processes used 0.09 of 2 cores on average during the run (peak 0.2)`;
