import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { compareRuns, renderCompareHtml } from '../../bench/_compare';
import { renderReport } from '../../bench/_report-html';
import type { RunFile } from '../../bench/types';
import { launchChromium } from '../helpers/browser';

/**
 * The bench's HTML reports opened in headless Chromium from a file, as a person opens one:
 * nothing is fetched, nothing logs an error, the table and the charts are on screen and the page
 * does not overflow sideways. A screenshot of each is taken (kept with BENCH_REPORT_SCREENSHOTS=dir).
 */

const fixture = (name: string): RunFile => JSON.parse(readFileSync(join(import.meta.dir, '../fixtures/bench', name), 'utf8'));
const a = fixture('run-a.json');
const b = fixture('run-b.json');

let browser: Browser;
let dir: string;

beforeAll(async () => {
  browser = await launchChromium();
  dir = await mkdtemp(join(tmpdir(), 'bench-report-'));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await rm(dir, { recursive: true, force: true });
});

/** Opens `html` from a file; returns the page and what the browser did besides loading it. */
async function open(name: string, html: string): Promise<{ page: Page; problems: string[]; screenshot: Buffer }> {
  const file = join(dir, name);
  await writeFile(file, html);
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`console.${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e}`));
  page.on('request', (r) => {
    if (r.url() !== `file://${file}`) problems.push(`request: ${r.url()}`);
  });
  await page.goto(`file://${file}`, { waitUntil: 'load' });
  const screenshot = await page.screenshot({ fullPage: true });
  if (process.env.BENCH_REPORT_SCREENSHOTS) await writeFile(join(process.env.BENCH_REPORT_SCREENSHOTS, `${name}.png`), screenshot);
  return { page, problems, screenshot };
}

/** Width and height of a PNG from its IHDR chunk. */
const pngSize = (png: Buffer) => ({ signature: png.subarray(0, 8).toString('hex'), width: png.readUInt32BE(16), height: png.readUInt32BE(20) });

test('the run report renders in Chromium: no error, nothing fetched, the table and the charts visible', async () => {
  const { page, problems, screenshot } = await open('report.html', renderReport(b));
  try {
    expect(problems).toEqual([]);
    const size = pngSize(screenshot);
    expect(size.signature).toBe('89504e470d0a1a0a');
    expect(size.width).toBe(1280);
    expect(size.height).toBeGreaterThan(1500);
    await expect(page.getByRole('heading', { name: 'hogbase benchmark' }).isVisible()).resolves.toBe(true);
    await expect(page.getByRole('alert').isVisible()).resolves.toBe(true);
    const table = page.locator('table.headline');
    await expect(table.isVisible()).resolves.toBe(true);
    await expect(table.getByRole('cell', { name: '15,500 events/s' }).isVisible()).resolves.toBe(true);
    await expect(table.getByRole('cell', { name: 'property filter (plan = enterprise)' }).isVisible()).resolves.toBe(true);
    expect((await table.innerText()).split('\n')[0].split('\t')).toEqual(['Figure', 'hogbase', 'spread (min–max)', 'bare Bun.serve', 'durable floor', 'hogbase / floor']);
    // Every chart takes real room on the page, and nothing sticks out sideways.
    const boxes = await page.locator('svg.chart').evaluateAll((svgs) => svgs.map((s) => s.getBoundingClientRect()).map((r) => [Math.round(r.width), Math.round(r.height)]));
    expect(boxes.length).toBe(4);
    for (const [w, h] of boxes) {
      expect(w).toBeGreaterThan(600);
      expect(h).toBeGreaterThan(100);
    }
    expect(await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth)).toBeLessThanOrEqual(1280);
  } finally {
    await page.close();
  }
}, 60_000);

test('the comparison renders in Chromium with its chart and every figure', async () => {
  const rows = compareRuns(a, b);
  const { page, problems } = await open('compare.html', renderCompareHtml(rows, { a, b, aName: 'run-a.json', bName: 'run-b.json' }));
  try {
    expect(problems).toEqual([]);
    await expect(page.locator('table.compare tbody tr').count()).resolves.toBe(rows.length);
    await expect(page.getByText('3 better, 4 worse, 8 no change').isVisible()).resolves.toBe(true);
    const box = await page.locator('svg.chart').boundingBox();
    expect(box!.width).toBeGreaterThan(600);
    expect(await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth)).toBeLessThanOrEqual(1280);
  } finally {
    await page.close();
  }
}, 60_000);
