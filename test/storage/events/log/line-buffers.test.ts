import { beforeEach, expect, test } from 'bun:test';
import { giveBack, keepSpares, lineBuffer, POOLED_MIN_BYTES, spareLineBytes, takeSpares } from '../../../../src/storage/events/log/line-buffers';

/** Large requests' lines buffers filled again once written (fresh pages fault on this machine). */
beforeEach(() => {
  keepSpares(true);
  takeSpares(); // what other test files left in this module
});

const MIB = 1024 * 1024;

test('a buffer given back is the next one handed out for lines of about its size; a new one is rounded up to whole units', () => {
  const first = lineBuffer(1_300_000);
  const rounded = Math.ceil(1_300_000 / POOLED_MIN_BYTES) * POOLED_MIN_BYTES;
  expect(rounded).toBeGreaterThan(1_300_000);
  expect(first.byteLength).toBe(rounded);
  expect(first.byteOffset).toBe(0);
  giveBack(first.buffer);
  expect(spareLineBytes()).toBe(rounded);
  const again = lineBuffer(1_000_000);
  expect(again.buffer).toBe(first.buffer);
  expect(spareLineBytes()).toBe(0);
  // None spare now: a new one.
  expect(lineBuffer(1_000_000).buffer).not.toBe(first.buffer);
});

test('the smallest spare that fits is taken, never one over twice the need (its lines would be copied, not moved)', () => {
  const sizes = [4 * MIB, 2 * MIB, 1 * MIB];
  const buffers = sizes.map((n) => new ArrayBuffer(n));
  for (const b of buffers) giveBack(b);
  expect(lineBuffer(1_500_000).buffer).toBe(buffers[1]);
  expect(lineBuffer(900_000).buffer).toBe(buffers[2]);
  const small = lineBuffer(1_000_000); // only the 4 MiB one is left: over twice 1,000,000
  expect(small.buffer).not.toBe(buffers[0]);
  expect(small.byteLength).toBe(Math.ceil(1_000_000 / POOLED_MIN_BYTES) * POOLED_MIN_BYTES);
  const left = takeSpares();
  expect(left.length).toBe(1);
  expect(left[0]).toBe(buffers[0]);
});

test('small buffers are neither pooled nor handed out of the pool, and the spares are capped', () => {
  const spare = new ArrayBuffer(POOLED_MIN_BYTES);
  giveBack(spare);
  const small = lineBuffer(10_000);
  expect(small.buffer).not.toBe(spare);
  expect(small.byteLength).toBe(10_000);
  giveBack(small.buffer);
  giveBack(new ArrayBuffer(POOLED_MIN_BYTES - 1));
  expect(spareLineBytes()).toBe(POOLED_MIN_BYTES); // the one spare
  takeSpares();
  // Given 160 MiB in 16 MiB buffers (never touched: no memory), the pool keeps 96 MiB.
  for (let i = 0; i < 10; i++) giveBack(new ArrayBuffer(16 * MIB));
  expect(spareLineBytes()).toBe(96 * MIB);
  expect(takeSpares().length).toBe(6);
  expect(spareLineBytes()).toBe(0);
});

test('past the memory trigger the spares are dropped and none is kept, until told to keep them again', () => {
  giveBack(new ArrayBuffer(MIB));
  keepSpares(false);
  expect(spareLineBytes()).toBe(0);
  giveBack(new ArrayBuffer(MIB));
  expect(spareLineBytes()).toBe(0);
  keepSpares(true);
  const b = new ArrayBuffer(MIB);
  giveBack(b);
  expect(lineBuffer(800_000).buffer).toBe(b);
});
