import type { Database } from '../db/database';
import { insertCallRecords, type NewCallRecord } from './repositories/call-records';
import { isDependencyFailure } from '../kernel/dependency';

export type { NewCallRecord } from './repositories/call-records';

interface Waiting {
  row: NewCallRecord;
  resolve(): void;
  reject(error: unknown): void;
}

const MAX_BATCH = 500;

/**
 * Group commit for call records. A check waits until its own record is durable before it answers
 * (an allowed call with no record would be a hole in the trail), but the INSERTs of concurrent
 * checks share one statement: while one batch is being written, the next one gathers. Under no
 * load a record is written at once, alone; under load one round trip carries up to MAX_BATCH.
 */
export class CallTrailWriter {
  private queue: Waiting[] = [];
  private flushing: Promise<void> | undefined;

  constructor(private readonly db: Database) {}

  write(row: NewCallRecord): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ row, resolve, reject });
      this.flushing ??= this.drain();
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
      await this.insert(batch.map((w) => w.row));
      for (const waiting of batch) waiting.resolve();
      return;
    } catch (error) {
      if (batch.length === 1 || isDependencyFailure(error)) {
        for (const waiting of batch) waiting.reject(error);
        return;
      }
    }
    for (const waiting of batch) {
      try {
        await this.insert([waiting.row]);
        waiting.resolve();
      } catch (error) {
        waiting.reject(error);
      }
    }
  }

  private insert(rows: readonly NewCallRecord[]): Promise<void> {
    return insertCallRecords(this.db, rows);
  }
}
