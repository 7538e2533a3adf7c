import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** What the agent keeps per handled event: the durable record that makes handling idempotent. */
export interface StoredResult {
  eventId: string;
  type: string;
  handledAt: string;
  result: unknown;
}

export interface ResultStore {
  get(eventId: string): Promise<StoredResult | undefined>;
  put(record: StoredResult): Promise<void>;
}

// Event ids are `evt_` TypeIDs; anything else never becomes a file name (no path tricks).
const EVENT_ID = /^evt_[0-9a-z]{1,64}$/;

/**
 * One JSON file per event id. A write goes to a temporary file first and is renamed into place,
 * so after a crash a result file is either complete or absent, never half written.
 */
export class FileResultStore implements ResultStore {
  constructor(private readonly dir: string) {}

  private fileOf(eventId: string): string {
    if (!EVENT_ID.test(eventId)) throw new Error(`not an event id: ${JSON.stringify(eventId)}`);
    return path.join(this.dir, `${eventId}.json`);
  }

  async get(eventId: string): Promise<StoredResult | undefined> {
    try {
      return JSON.parse(await readFile(this.fileOf(eventId), 'utf8')) as StoredResult;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async put(record: StoredResult): Promise<void> {
    const file = this.fileOf(record.eventId);
    await mkdir(this.dir, { recursive: true });
    const staged = `${file}.${process.pid}.tmp`;
    await writeFile(staged, `${JSON.stringify(record, null, 2)}\n`, { flush: true });
    await rename(staged, file);
  }
}
