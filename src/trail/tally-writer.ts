import type { Database } from '../db/database';
import type { Logger } from '../kernel/log';
import { addTallies, type TallyRow, type TreeTallyRow } from './repositories/tallies';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

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
 * The trail's tallies, counted as checks are recorded: in memory by (pod, hour, decision, reason,
 * rule), and each tree's allowed calls by (pod, day, tree); added to Postgres once a second in one
 * statement whatever the load. The check never
 * waits for it, so the tallies cost the hot path a map update. What it gives up: a replica killed
 * loses its last second of counts (never a record), and while Postgres is away counts past
 * `maxRows` distinct rows are dropped and logged.
 */
export class TallyWriter {
  private counts = new Map<string, TallyRow>();
  private trees = new Map<string, TreeTallyRow>();
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
    // Keys by numbers, the row's Date and day made only for a new row: every check counts, few make a row.
    const hourMs = check.atMs - (check.atMs % HOUR_MS);
    this.add(this.counts, `${check.podId}\u0000${hourMs}\u0000${check.decision}\u0000${check.reason}\u0000${check.orgRule}`, () => ({
      pod_id: check.podId,
      hour: new Date(hourMs),
      decision: check.decision,
      reason: check.reason,
      org_rule: check.orgRule,
      calls: 0,
    }));
    if (check.decision !== 'allowed') return;
    // A UTC day, as toISOString names it; keys of one width (13 digits) sort as the days do.
    const dayMs = check.atMs - (check.atMs % DAY_MS);
    this.add(this.trees, `${check.podId}\u0000${dayMs}\u0000${check.rootId}`, () => ({
      pod_id: check.podId,
      day: new Date(dayMs).toISOString().slice(0, 10),
      root_id: check.rootId,
      calls: 0,
    }));
  }

  private add<R extends { calls: number }>(counts: Map<string, R>, key: string, make: () => R): void {
    const row = counts.get(key);
    if (row) {
      row.calls += 1;
      return;
    }
    if (counts.size >= this.maxRows) {
      this.dropped += 1;
      void this.flush();
      return;
    }
    counts.set(key, { ...make(), calls: 1 });
    if (counts.size >= this.maxRows) void this.flush();
  }

  /** Adds what was counted so far; resolves once it is in Postgres (or kept for the next try). */
  flush(): Promise<void> {
    this.flushing ??= this.write().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  private keep<R extends { calls: number }>(into: Map<string, R>, from: Map<string, R>): void {
    for (const [key, row] of from) {
      const now = into.get(key);
      if (now) now.calls += row.calls;
      else if (into.size < this.maxRows) into.set(key, row);
      else this.dropped += row.calls;
    }
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
    if (this.counts.size === 0 && this.trees.size === 0) return;
    const [counts, trees] = [this.counts, this.trees];
    this.counts = new Map();
    this.trees = new Map();
    const sorted = <R>(rows: Map<string, R>) => [...rows.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
    try {
      await addTallies(this.options.db, sorted(counts), sorted(trees));
    } catch (err) {
      // Kept for the next flush, merged with what came meanwhile, within the bound.
      this.keep(this.counts, counts);
      this.keep(this.trees, trees);
      this.options.log.warn({ err: { message: (err as Error).message } }, 'call tallies not written; retrying');
    }
  }
}
