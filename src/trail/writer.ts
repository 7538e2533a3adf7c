import type { NewCallRecord } from './repositories/call-records';

export type { NewCallRecord } from './repositories/call-records';

/** Writes any number of call records in one statement (repositories/call-records.ts). */
export type WriteRecords = (rows: readonly NewCallRecord[]) => Promise<void>;

/**
 * How a check's record reaches the trail: `write` resolves once the record is durable (no record,
 * no answer), `settle` once every record handed over so far is (graceful shutdown). The plain one
 * writes each record alone; src/speedups/group-commit.ts shares statements between checks.
 */
export interface TrailWriter {
  write(row: NewCallRecord): Promise<void>;
  settle(): Promise<void>;
}

/** One statement per record. */
export function plainTrailWriter(insert: WriteRecords): TrailWriter {
  const writing = new Set<Promise<void>>();
  return {
    write(row) {
      const written = insert([row]);
      writing.add(written);
      const done = () => void writing.delete(written);
      written.then(done, done);
      return written;
    },
    async settle() {
      await Promise.allSettled([...writing]);
    },
  };
}
