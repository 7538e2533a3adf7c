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
 * never changes, so it is a named prepared statement: each connection parses and plans it once,
 * and a batch sends only Bind and Execute (a multi-row VALUES list would be rebuilt, and an
 * unnamed statement parsed and planned again, for every batch: the trail is one write per check).
 */
const INSERT_ROWS = {
  name: 'call_records_insert_v1',
  text: `insert into call_records (${COLUMNS.join(', ')})
select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                     $9::text[], $10::text[], $11::timestamptz[], $12::timestamptz[], $13::integer[])`,
};

/** The one query method this file needs of a pooled node-postgres client. */
interface PgConnection {
  query(statement: { name: string; text: string; values: unknown[] }): Promise<unknown>;
}

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
    const values = COLUMNS.map((column) => rows.map((row) => row[column] ?? null));
    // Straight to a connection of knex's pool (same pool, timeouts and broken-connection checks):
    // knex cannot send a named statement, and its query builder was most of this write's cost.
    const connection = (await this.db.client.acquireConnection()) as PgConnection;
    try {
      await connection.query({ ...INSERT_ROWS, values });
    } finally {
      await this.db.client.releaseConnection(connection);
    }
  }
}
