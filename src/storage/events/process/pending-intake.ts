/**
 * The distinct ids named by logged capture requests that are not processed yet, so that a flag
 * check (or a person read) for one of them can wait for its person changes, and everything else
 * answers at once. Requests are numbered in log order (the store's intake sequence); `done` is
 * the highest number processed, which only grows.
 *
 * Ids are indexed only when someone asks (`pending`, `target`): most requests are processed
 * before anyone asks about their ids, and indexing every id of every request at receipt cost the
 * main thread more than the checks ever save (see bench/NOTES.md). Until then a request is kept
 * in a log-ordered list, so forgetting what processing has done costs what it forgets: a scan of
 * every id remembered, made by each request once `maxIds` were pending (an anonymous burst),
 * cost many times the request's own work.
 */
export class PendingIntake {
  /** team → id → the latest sequence number naming it, for the requests of `log[head, indexedTo)`. */
  private readonly ids = new Map<number, Map<string, number>>();
  /** Ids in `ids`, and ids of the requests not indexed yet (counted with repeats). */
  private indexedCount = 0;
  private unindexedCount = 0;
  private log: Array<{ teamId: number; seq: number; ids: readonly string[] }> = [];
  private head = 0;
  private indexedTo = 0;
  /** Requests up to this one were too many to remember one by one: any check waits for them. */
  private overflowSeq = 0;
  /** The latest request's sequence number per project. */
  private readonly lastOfTeam = new Map<number, number>();

  constructor(private readonly maxIds: number) {}

  /** Ids remembered (those of requests not indexed yet counted with repeats). */
  get size(): number {
    return this.indexedCount + this.unindexedCount;
  }

  /** Remember request `seq` of `teamId`, naming `distinctIds`. */
  note(teamId: number, distinctIds: readonly string[], seq: number, done: number): void {
    this.lastOfTeam.set(teamId, seq);
    this.sweep(done);
    if (this.indexedCount + this.unindexedCount + distinctIds.length > this.maxIds) {
      this.overflowSeq = seq;
      return;
    }
    if (distinctIds.length === 0) return;
    this.log.push({ teamId, seq, ids: distinctIds });
    this.unindexedCount += distinctIds.length;
  }

  /** Whether a request not processed yet names one of these ids of the project. */
  pending(teamId: number, distinctIds: readonly string[], done: number): boolean {
    if (this.overflowSeq > done) return true;
    this.index();
    const ids = this.ids.get(teamId);
    if (!ids) return false;
    for (const id of distinctIds) {
      const seq = ids.get(id);
      if (seq !== undefined && seq > done) return true;
    }
    return false;
  }

  /**
   * The request to wait for (0: none pending): the latest unprocessed one of the project naming
   * one of these ids; ids null: of the project; project null: any (`latest`, the last numbered).
   */
  target(teamId: number | null, distinctIds: readonly string[] | null, done: number, latest: number): number {
    let target = this.overflowSeq > done ? this.overflowSeq : 0;
    if (teamId === null) return latest > done ? latest : target;
    if (distinctIds === null) {
      const seq = this.lastOfTeam.get(teamId) ?? 0;
      return seq > done && seq > target ? seq : target;
    }
    this.index();
    const ids = this.ids.get(teamId);
    if (!ids) return target;
    for (const id of distinctIds) {
      const seq = ids.get(id);
      if (seq !== undefined && seq > done && seq > target) target = seq;
    }
    return target;
  }

  /** Forget the ids of requests processed by `done` (oldest first; an id named again later stays). */
  sweep(done: number): void {
    const log = this.log;
    let head = this.head;
    if (head < log.length && log[log.length - 1].seq <= done) {
      // Every request remembered is processed (each id remembered was named by one of them at
      // its latest), so all are forgotten at once, without looking each one up.
      this.ids.clear();
      this.indexedCount = 0;
      this.unindexedCount = 0;
      log.length = 0;
      this.head = 0;
      this.indexedTo = 0;
      return;
    }
    while (head < log.length && log[head].seq <= done) {
      const { teamId, ids: named } = log[head];
      if (head++ >= this.indexedTo) {
        this.unindexedCount -= named.length;
        continue;
      }
      const ids = this.ids.get(teamId);
      if (!ids) continue;
      for (const id of named) {
        const seq = ids.get(id);
        if (seq === undefined || seq > done) continue;
        ids.delete(id);
        this.indexedCount--;
      }
      if (ids.size === 0) this.ids.delete(teamId);
    }
    if (head === log.length) {
      log.length = 0;
      head = 0;
      this.indexedTo = 0;
    } else if (head >= 4096 && head * 2 >= log.length) {
      log.splice(0, head);
      this.indexedTo = Math.max(0, this.indexedTo - head);
      head = 0;
    }
    this.head = head;
  }

  /** Index the ids of the requests remembered since the last check. */
  private index(): void {
    const log = this.log;
    for (let i = Math.max(this.indexedTo, this.head); i < log.length; i++) {
      const { teamId, seq, ids: named } = log[i];
      let ids = this.ids.get(teamId);
      if (!ids) this.ids.set(teamId, (ids = new Map()));
      const known = ids.size;
      for (const id of named) ids.set(id, seq);
      this.indexedCount += ids.size - known;
    }
    this.indexedTo = log.length;
    this.unindexedCount = 0;
  }
}
