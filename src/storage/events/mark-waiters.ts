/** Waits for `work` at most `ms` (a real timer), whichever comes first; `work` runs on regardless. */
export async function withinMs(work: Promise<void>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([work, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/** Waiters for a mark (a segment id, a sequence number) that only grows; each waits at most its timeout. */
export class MarkWaiters {
  private list: Array<{ mark: number; resolve(): void }> = [];

  get waiting(): boolean {
    return this.list.length > 0;
  }

  wait(mark: number, timeoutMs: number): Promise<void> {
    return withinMs(new Promise<void>((resolve) => this.list.push({ mark, resolve })), timeoutMs);
  }

  /** Resolve everyone waiting for `upTo` or less. */
  release(upTo: number): void {
    if (this.list.length === 0) return;
    const ready = this.list.filter((w) => w.mark <= upTo);
    this.list = this.list.filter((w) => w.mark > upTo);
    for (const w of ready) w.resolve();
  }
}
