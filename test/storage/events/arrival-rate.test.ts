import { describe, expect, test } from 'bun:test';
import { ArrivalRate } from '../../../src/storage/events/arrival-rate';

describe('ArrivalRate', () => {
  test('saturated from 100 appends in a 100 ms window of the store clock, for that window and the next', () => {
    let now = 1_000_000;
    const rate = new ArrivalRate(() => now);
    for (let i = 0; i < 99; i++) rate.note(10);
    expect(rate.saturated()).toBe(false);
    rate.note(10);
    expect(rate.saturated()).toBe(true);
    now += 150;
    expect(rate.saturated()).toBe(true); // that window has ended, and decides until the next ends
    rate.note(10); // a new window, which keeps the last one's count while it runs
    expect(rate.saturated()).toBe(true);
    now += 100;
    expect(rate.saturated()).toBe(false); // the window of one append has ended
    now += 300;
    for (let i = 0; i < 100; i++) rate.note(10);
    expect(rate.saturated()).toBe(true);
    now += 250;
    rate.note(10);
    expect(rate.saturated()).toBe(false); // a busy window followed by an empty one is not carried over
  });

  test('saturated from 1 MB in a window, however few the appends', () => {
    let now = 5;
    const rate = new ArrivalRate(() => now);
    rate.note(1024 * 1024 - 1);
    expect(rate.saturated()).toBe(false);
    rate.note(1);
    expect(rate.saturated()).toBe(true);
    now += 99;
    expect(rate.saturated()).toBe(true);
  });
});
