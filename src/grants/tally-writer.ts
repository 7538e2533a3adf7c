import type { Database } from '../db/database';
import type { Logger } from '../kernel/log';
import { addTallies, type TallyRow } from './repositories/call-record-tallies';

const HOUR_MS = 3_600_000;

/** A recorded check, as the tallies count it. */
export interface TalliedCheck {
  podId: string;
  rootId: string;
  atMs: number;
  decision: TallyRow['decision'];
  reason: string;
  orgRule: string;
}

export interface TallyWriterOptions {
  db: Database;
  log: Logger;
  /** How often the counts gathered are added to call_tallies. */
  flushMs?: number;
  /** Distinct rows kept in memory at most; past it a flush starts at once, and a failing database drops the newest counts. */
  maxRows?: number;
}

/**
 * The trail's tallies, counted as checks are recorded: in memory by (pod, hour, tree, decision,
 * reason, rule), added to Postgres once a second in one statement whatever the load. The check never
 * waits for it, so the tallies cost the hot path a map update. What it gives up: a replica killed
 * loses its last second of counts (never a record), and while Postgres is away counts past
 * `maxRows` distinct rows are dropped and logged.
 */
export class TallyWriter {
  private counts = new Map<string, TallyRow>();
  private flushing: Promise<void> | undefined;
  private readonly timer: NodeJS.Timeout;
  private readonly maxRows: number;
  private dropped = 0;

  constructor(private readonly options: TallyWriterOptions) {
    this.maxRows = options.maxRows ?? 10_000;
    this.timer = setInterval(() => void this.flush(), options.flushMs ?? 1000);
    this.timer.unref();
  }

  count(check: TalliedCheck): void {
    const hour = new Date(check.atMs - (check.atMs % HOUR_MS));
    const key = [check.podId, hour.getTime(), check.rootId, check.decision, check.reason, check.orgRule].join('\u0000');
    const row = this.counts.get(key);
    if (row) {
      row.calls += 1;
      return;
    }
    if (this.counts.size >= this.maxRows) {
      this.dropped += 1;
      void this.flush();
      return;
    }
    this.counts.set(key, {
      pod_id: check.podId,
      hour,
      root_id: check.rootId,
      decision: check.decision,
      reason: check.reason,
      org_rule: check.orgRule,
      calls: 1,
    });
    if (this.counts.size >= this.maxRows) void this.flush();
  }

  /** Adds what was counted so far; resolves once it is in Postgres (or kept for the next try). */
  flush(): Promise<void> {
    this.flushing ??= this.write().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  /** Stops the timer and writes what is left (shutdown). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flushing;
    await this.flush();
  }

  private async write(): Promise<void> {
    if (this.dropped > 0) {
      this.options.log.warn({ dropped: this.dropped }, 'call tallies dropped: too many distinct rows waiting for Postgres');
      this.dropped = 0;
    }
    if (this.counts.size === 0) return;
    const batch = this.counts;
    this.counts = new Map();
    const rows = [...batch.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
    try {
      await addTallies(this.options.db, rows);
    } catch (err) {
      // Kept for the next flush, merged with what came meanwhile, within the bound.
      for (const [key, row] of batch) {
        const now = this.counts.get(key);
        if (now) now.calls += row.calls;
        else if (this.counts.size < this.maxRows) this.counts.set(key, row);
        else this.dropped += row.calls;
      }
      this.options.log.warn({ err: { message: (err as Error).message } }, 'call tallies not written; retrying');
    }
  }
}
