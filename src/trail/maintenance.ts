import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Database } from '../db/database';
import type { Clock } from '../kernel/clock';
import type { Logger } from '../kernel/log';
import { exportTrailDay } from './export';
import {
  trailBytes,
  trailDaysAhead,
  trailDaysDropped,
  trailDaysPacked,
  trailExportFailures,
  trailLastPass,
  trailOldestDay,
  trailPartitions,
} from './metrics';
import { createTrailDay, dropTrailDay, nextDay, trailDays } from './repositories/days';
import { heldGrantIds } from './repositories/holds';
import { dayIndexes, packTrailDay } from './repositories/packing';
import { dropTalliesBefore } from './repositories/tallies';
import { packHashes, pruneCheckpoints, sizeSignedBefore } from './repositories/tree';
import { keepDroppedSpan } from './tree-drop-hashes';

/** Days made ahead of the clock: a replica down over a weekend still finds today's partition. */
export const DAYS_AHEAD = 3;
/** Every checkpoint of the last day is kept; before that, the last of each UTC day. */
const CHECKPOINTS_KEPT_WHOLE_MS = 86_400_000;
/** Often enough to make a new day long before it starts, rarely enough to cost nothing. */
const INTERVAL_MS = 3_600_000;

export interface TrailMaintenanceOptions {
  db: Database;
  clock: Clock;
  log: Logger;
  retentionDays: number;
  /** When set, each day is exported here (`call-records-YYYY-MM-DD.jsonl.gz`) before it is dropped. */
  archiveDir?: string;
  /** Aborted at shutdown: a day's index being packed is given up, not waited for. */
  stop?: AbortSignal;
}

export interface TrailMaintenanceRun {
  created: string[];
  dropped: string[];
  /** Days past retention kept because their export failed. */
  kept: string[];
  /** The closed day whose B-tree this pass rebuilt packed, if any. */
  packed: string[];
}

export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

function daysFrom(day: string, count: number): string[] {
  const days = [day];
  while (days.length < count) days.push(nextDay(days.at(-1)!));
  return days;
}

export function archiveFile(archiveDir: string, day: string): string {
  return path.join(archiveDir, `call-records-${day}.jsonl.gz`);
}

/**
 * One pass: makes today's and the next days' partitions (by the service's clock), exports and
 * drops the days past retention, and updates the metrics. Every step is idempotent, so replicas
 * may all run it: a day another one made or dropped meanwhile is a failed step retried next pass.
 */
export async function maintainTrail(options: TrailMaintenanceOptions): Promise<TrailMaintenanceRun> {
  const { db, clock, log, retentionDays, archiveDir } = options;
  const today = utcDay(clock.now());
  const run: TrailMaintenanceRun = { created: [], dropped: [], kept: [], packed: [] };
  const existing = new Set((await trailDays(db)).days.map((d) => d.day));
  for (const day of daysFrom(today, DAYS_AHEAD + 1)) {
    if (existing.has(day)) continue;
    await createTrailDay(db, day);
    run.created.push(day);
  }
  // A day is kept while any of its records is younger than the retention.
  const oldestKept = utcDay(clock.now() - retentionDays * 86_400_000);
  const expired = [...existing].filter((day) => day < oldestKept).sort();
  if (expired.length > 0) {
    const held = await heldGrantIds(db);
    for (const day of expired) {
      if (archiveDir) {
        try {
          await mkdir(archiveDir, { recursive: true });
          const exported = await exportTrailDay(db, day, archiveFile(archiveDir, day));
          log.info({ day, records: exported.records, sha256: exported.sha256 }, 'exported a day of the call trail');
        } catch (err) {
          trailExportFailures.inc();
          log.error({ day, err: { message: (err as Error).message } }, 'call trail export failed; the day is kept');
          run.kept.push(day);
          continue;
        }
      }
      // The tree keeps proving the records kept: first the hashes that stand for the day's leaves.
      const kept = await keepDroppedSpan(db, day, held);
      await dropTrailDay(db, day, held);
      trailDaysDropped.inc();
      run.dropped.push(day);
      log.info({ day, heldGrants: held.length, treeHashesKept: kept }, 'dropped a day of the call trail past retention');
    }
  }
  // The tallies of the days dropped go with them (a few hundred rows a day: one small delete).
  await dropTalliesBefore(db, new Date(`${oldestKept}T00:00:00Z`));
  // Checkpoints older than a day: the last of each day stays, the others go (one a second otherwise).
  await pruneCheckpoints(db, new Date(clock.now() - CHECKPOINTS_KEPT_WHOLE_MS));
  await packTreeHashes(options, oldestKept);
  await packNewestClosedDay(options, today, oldestKept, run);
  await observe(db, today);
  trailLastPass.set(clock.now() / 1000);
  return run;
}

/**
 * Moves the tree's hashes that stand for the dropped days into packs (repositories/tree.ts
 * packHashes); those of live days stay one row each. A failure only costs bytes: retried next pass.
 */
async function packTreeHashes(options: TrailMaintenanceOptions, oldestKept: string): Promise<void> {
  const { db, log } = options;
  try {
    const moved = await packHashes(db, await sizeSignedBefore(db, new Date(`${oldestKept}T00:00:00Z`)));
    if (moved > 0) log.info({ moved }, 'packed the trail tree hashes of dropped days');
  } catch (err) {
    log.error({ err: { message: (err as Error).message } }, 'packing the trail tree hashes failed; retried next pass');
  }
}

/**
 * Packs the B-tree of the newest closed day not packed yet (repositories/packing.ts):
 * one a pass, so a first start on a long trail spreads the work over its hourly passes. A failure
 * only costs bytes: it is logged and the day is tried again next pass.
 */
async function packNewestClosedDay(options: TrailMaintenanceOptions, today: string, oldestKept: string, run: TrailMaintenanceRun) {
  const { db, log } = options;
  const candidates = (await dayIndexes(db)).filter((d) => !d.packed && d.day < today && d.day >= oldestKept);
  const day = candidates
    .map((d) => d.day)
    .sort()
    .at(-1);
  if (!day) return;
  try {
    const sizes = await packTrailDay(db, day, options.stop);
    if (!sizes) return;
    trailDaysPacked.inc();
    run.packed.push(day);
    log.info({ day, bytesBefore: sizes.before, bytesAfter: sizes.after }, "packed a closed day's call trail index");
  } catch (err) {
    log.warn({ day, err: { message: (err as Error).message } }, "packing a closed day's call trail index failed; retrying next pass");
  }
}

async function observe(db: Database, today: string): Promise<void> {
  const { days, defaultBytes, heldBytes } = await trailDays(db);
  trailPartitions.set(days.length);
  trailDaysAhead.set(days.filter((d) => d.day > today).length);
  if (days[0]) trailOldestDay.set(Date.parse(`${days[0].day}T00:00:00Z`) / 1000);
  trailBytes.set(
    { part: 'days' },
    days.reduce((sum, d) => sum + d.bytes, 0),
  );
  trailBytes.set({ part: 'default' }, defaultBytes);
  trailBytes.set({ part: 'held' }, heldBytes);
}

export interface TrailMaintenance {
  /** One pass now (tests, after moving the clock), after the one already running if any. */
  runNow(): Promise<TrailMaintenanceRun>;
  /** No more passes; resolves once the running one is over. */
  stop(): Promise<void>;
}

/**
 * Runs a pass at start and every hour. The timer is unref'd so it never keeps a process alive; a
 * failed pass is logged and retried on the next tick (the checks keep writing: a day with no
 * partition yet goes to the default partition, and is moved out when its partition is made).
 */
export function startTrailMaintenance(options: TrailMaintenanceOptions): TrailMaintenance {
  const stopping = new AbortController();
  let running: Promise<TrailMaintenanceRun> | null = null;
  const pass = () =>
    (running ??= maintainTrail({ ...options, stop: stopping.signal }).finally(() => {
      running = null;
    }));
  const tick = () =>
    void pass().catch((err: Error) => options.log.warn({ err: { message: err.message } }, 'call trail maintenance failed; retrying'));
  tick();
  const timer = setInterval(tick, INTERVAL_MS);
  timer.unref();
  const settled = async () => {
    await running?.catch(() => undefined);
  };
  return {
    runNow: async () => {
      await settled();
      return pass();
    },
    stop: async () => {
      clearInterval(timer);
      stopping.abort();
      await settled();
    },
  };
}
