import type { NewCallRecord } from './repositories/call-records';

export type { NewCallRecord } from './repositories/call-records';

/** Writes any number of call records in one statement (repositories/call-record-inserts.ts): their leaf indices, in order. */
export type WriteRecords = (rows: readonly NewCallRecord[]) => Promise<Array<number | undefined>>;

/**
 * How a check's record reaches the trail: `write` resolves once the record is durable, with its
 * leaf index in the trail's tree (no record, no answer; the answer's receipt), `settle` once every record handed over so far is (graceful shutdown). The plain one
 * writes each record alone; src/speedups/group-commit.ts shares statements between checks.
 */
export interface TrailWriter {
  write(row: NewCallRecord): Promise<number | undefined>;
  settle(): Promise<void>;
}

/** One statement per record. */
export function plainTrailWriter(insert: WriteRecords): TrailWriter {
  const writing = new Set<Promise<number | undefined>>();
  return {
    write(row) {
      const written = insert([row]).then((indices) => indices[0]);
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
