import type { Knex } from 'knex';
import type { Database } from '../db/database';
import { isDependencyFailure } from '../kernel/dependency';
import type { CallRecordRow } from '../grants/repository';

type OptionalColumns = 'approval_id' | 'error_code' | 'completed_at' | 'duration_ms';

/** A row of call_records as the check writes it (the grants domain reads the same table). */
export type NewCallRecord = Omit<CallRecordRow, OptionalColumns> & Partial<Pick<CallRecordRow, OptionalColumns>>;

interface Waiting {
  row: NewCallRecord;
  resolve(): void;
  reject(error: unknown): void;
}

const MAX_BATCH = 500;

/** Every column a check may write, in the order of INSERT_ROWS's arrays. */
const COLUMNS = [
  'id',
  'grant_id',
  'tool',
  'principal_kind',
  'principal_id',
  'outcome',
  'reason',
  'approval_id',
  'error_code',
  'args_digest',
  'requested_at',
  'completed_at',
  'duration_ms',
] as const satisfies ReadonlyArray<keyof NewCallRecord>;

/**
 * One statement for any number of rows: a column of values per array, zipped by unnest. Its text
 * never changes, so neither the service nor Postgres builds or parses a new statement per batch
 * (a multi-row VALUES list is rebuilt for every batch size: a few percent of a check's CPU).
 */
const INSERT_ROWS = `insert into call_records (${COLUMNS.join(', ')})
select * from unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[],
                     ?::text[], ?::timestamptz[], ?::timestamptz[], ?::integer[])`;

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

  private async insert(rows: readonly NewCallRecord[]): Promise<void> {
    // One array per column; node-postgres sends each as a Postgres array (nulls included).
    const columns = COLUMNS.map((column) => rows.map((row) => row[column] ?? null));
    await this.db.raw(INSERT_ROWS, columns as unknown as Knex.RawBinding[]);
  }
}
