/**
 * Speed-up: the call records of concurrent checks written by one statement (a group commit).
 *
 * Trades: a check's record may wait for the batch before it (while one batch is being written,
 * the next one gathers) for one round trip and one commit for up to MAX_BATCH records under load
 * instead of one each. With no batch in flight, the first one leaves once the I/O callbacks of the
 * event loop's turn have run (setImmediate), not at the first record: the budget script's answers
 * come back from Redis together, so the checks they settle reach here in the same turn, and sent
 * at the first of them, that record went alone and the rest of the turn's waited a whole commit
 * behind it. Alone, a record waits for nothing but that turn's end. A check still answers only
 * once its own record is durable: an allowed call with no record would be a hole in the trail.
 *
 * Off (SPEEDUPS=off): trail/writer.ts's plainTrailWriter, one statement per record.
 */
import { isDependencyFailure } from '../kernel/dependency';
import type { NewCallRecord, TrailWriter, WriteRecords } from '../trail/writer';

interface Waiting {
  row: NewCallRecord;
  resolve(leafIndex: number | undefined): void;
  reject(error: unknown): void;
}

const MAX_BATCH = 500;

/** The trail's writer whose statements carry the records of every check waiting at the time. */
export class GroupCommit implements TrailWriter {
  private queue: Waiting[] = [];
  private flushing: Promise<void> | undefined;

  /** `insert` writes any number of records in one statement (the trail's repository). */
  constructor(private readonly insert: WriteRecords) {}

  write(row: NewCallRecord): Promise<number | undefined> {
    return new Promise<number | undefined>((resolve, reject) => {
      this.queue.push({ row, resolve, reject });
      this.flushing ??= new Promise<void>((turnEnded) => setImmediate(turnEnded)).then(() => this.drain());
    });
  }

  /** Resolves when everything queued so far is written (shutdown). */
  async settle(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        await this.writeBatch(this.queue.splice(0, MAX_BATCH));
      }
    } finally {
      this.flushing = undefined;
    }
  }

  /**
   * One INSERT for the batch. Should Postgres refuse it for what a row holds (rather than for
   * being away), every row is tried alone, so one tenant's bad row fails that check only and
   * never its neighbours'.
   */
  private async writeBatch(batch: Waiting[]): Promise<void> {
    try {
      const indices = await this.insert(batch.map((w) => w.row));
      batch.forEach((waiting, i) => waiting.resolve(indices[i]));
      return;
    } catch (error) {
      if (batch.length === 1 || isDependencyFailure(error)) {
        for (const waiting of batch) waiting.reject(error);
        return;
      }
    }
    for (const waiting of batch) {
      try {
        const [index] = await this.insert([waiting.row]);
        waiting.resolve(index);
      } catch (error) {
        waiting.reject(error);
      }
    }
  }
}
