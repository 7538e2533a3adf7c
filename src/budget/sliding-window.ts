import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { RedisClient } from './redis-client';
import { DependencyUnavailableError } from '../kernel/dependency';
import { treeVersionKey, windowKey } from './keys';

export interface BudgetLevel {
  grantId: string;
  calls: number;
  windowMs: number;
}

export interface BudgetRequest {
  rootId: string;
  /** The grant first, its root last. */
  levels: readonly BudgetLevel[];
  /** Version the caller's cached facts were loaded under ('' when it has none yet). */
  expectedVersion: string;
  /** consume: the policy allowed, take one unit everywhere; probe: only report. */
  mode: 'consume' | 'probe';
  /** Tests of the window against a model only: decide at this time instead of Redis TIME. */
  atMs?: number;
}

export type BudgetAnswer =
  | { kind: 'missing' }
  | { kind: 'stale'; version: string }
  | { kind: 'allowed'; remaining: number; resetMs: number; atMs: number }
  | { kind: 'exhausted'; retryAfterMs: number; resetMs: number }
  | { kind: 'probed'; remaining: number; resetMs: number };

/** A grant's window as the trail rebuilds it: [time, how many calls at that time] still counting. */
export interface RestoredWindow extends BudgetLevel {
  counted: ReadonlyArray<readonly [number, number]>;
}

/**
 * The shape of windows. Budgets up to `exactMaxCalls` calls keep the exact time of every allowed
 * call (about 11 bytes each); larger ones count per bucket, `buckets` a window, so no grant holds
 * more than that many entries whatever its budget.
 */
export interface WindowShape {
  exactMaxCalls: number;
  buckets: number;
}

export const DEFAULT_WINDOW_SHAPE: WindowShape = { exactMaxCalls: 1000, buckets: 100 };

/** The scripts ship as .lua files beside this module in src/ (tsc does not copy them into dist/). */
function loadScript(name: string): string {
  const candidates = [path.join(__dirname, name), path.join(__dirname, '..', '..', '..', 'src', 'budget', name)];
  const found = candidates.find((file) => existsSync(file));
  if (!found) throw new Error(`${name} not found (looked in ${candidates.join(', ')})`);
  return readFileSync(found, 'utf8');
}

const SCRIPTS = {
  grantBudgetWindow: loadScript('sliding-window.lua'),
  grantBudgetRestore: loadScript('restore-windows.lua'),
};

type ScriptCommand = (numberOfKeys: number, ...args: Array<string | number>) => Promise<unknown>;

/**
 * The one Redis round trip of a broker check: the version check of cached facts and the budget
 * of the whole chain in one atomic script. ioredis sends EVALSHA and falls back to EVAL on
 * NOSCRIPT, so a SCRIPT FLUSH or a Redis restart costs one extra send, never a failure.
 * Any Redis error (unreachable, slower than REDIS_COMMAND_TIMEOUT_MS) surfaces as
 * DependencyUnavailableError: the caller answers 503 and nothing is allowed.
 */
export class SlidingWindowBudget {
  private readonly commands: Record<keyof typeof SCRIPTS, ScriptCommand>;

  constructor(
    private readonly redis: RedisClient,
    private readonly shape: WindowShape = DEFAULT_WINDOW_SHAPE,
  ) {
    const commands = {} as Record<keyof typeof SCRIPTS, ScriptCommand>;
    for (const [name, lua] of Object.entries(SCRIPTS) as Array<[keyof typeof SCRIPTS, string]>) {
      if (!(name in redis)) redis.defineCommand(name, { lua });
      commands[name] = (redis as unknown as Record<string, ScriptCommand>)[name]!.bind(redis);
    }
    this.commands = commands;
  }

  /** 0 for an exact window, else the bucket length in ms. */
  bucketMsOf(level: Pick<BudgetLevel, 'calls' | 'windowMs'>): number {
    return level.calls <= this.shape.exactMaxCalls ? 0 : Math.max(1, Math.ceil(level.windowMs / this.shape.buckets));
  }

  async run(request: BudgetRequest): Promise<BudgetAnswer> {
    const keys = [treeVersionKey(request.rootId), ...request.levels.map((l) => windowKey(request.rootId, l.grantId))];
    const args: Array<string | number> = [request.expectedVersion, request.mode, request.atMs ?? ''];
    for (const level of request.levels) args.push(level.calls, level.windowMs, this.bucketMsOf(level));
    return parseReply(await this.call('grantBudgetWindow', keys, args));
  }

  /**
   * The tree's version, read before any of its facts are loaded (so they are at least as fresh);
   * null when Redis has lost the tree, whose windows must then be rebuilt from the call trail.
   */
  async treeVersion(rootId: string): Promise<string | null> {
    try {
      return await this.redis.get(treeVersionKey(rootId));
    } catch (error) {
      throw new DependencyUnavailableError(`tree version not read: ${(error as Error).message}`);
    }
  }

  /** Gives back the unit a call took at every level at `atMs` (its record could not be written). */
  async refund(rootId: string, levels: readonly BudgetLevel[], atMs: number): Promise<void> {
    const pipeline = this.redis.pipeline();
    for (const level of levels) {
      const bucketMs = this.bucketMsOf(level);
      const key = windowKey(rootId, level.grantId);
      if (bucketMs === 0) pipeline.lrem(key, -1, String(atMs));
      else pipeline.hincrby(key, String(atMs - (atMs % bucketMs)), -1).hincrby(key, 'n', -1);
    }
    await pipeline.exec();
  }

  /**
   * Puts back every window of a tree whose version key is gone, then the version: one script, so
   * no check consumes in between. Answers the version now in force.
   */
  async restore(rootId: string, windows: readonly RestoredWindow[], freshVersion: string): Promise<string> {
    const keys = [treeVersionKey(rootId), ...windows.map((w) => windowKey(rootId, w.grantId))];
    const args: Array<string | number> = [freshVersion];
    for (const window of windows) {
      const bucketMs = this.bucketMsOf(window);
      const values = bucketMs === 0 ? callTimes(window.counted) : bucketCounts(window.counted, bucketMs);
      args.push(bucketMs, window.windowMs, values.length, ...values);
    }
    const reply = await this.call('grantBudgetRestore', keys, args);
    if (!Array.isArray(reply) || typeof reply[1] !== 'string') throw new DependencyUnavailableError('restore script gave no version');
    return reply[1];
  }

  private async call(name: keyof typeof SCRIPTS, keys: string[], args: Array<string | number>): Promise<unknown> {
    this.redis.beforeSend?.();
    try {
      return await this.commands[name](keys.length, ...keys, ...args);
    } catch (error) {
      throw new DependencyUnavailableError(`budget script failed: ${(error as Error).message}`);
    }
  }
}

/** Every call's time, oldest first (an exact window). */
function callTimes(counted: RestoredWindow['counted']): number[] {
  return counted.flatMap(([at, n]) => Array<number>(n).fill(at)).sort((a, b) => a - b);
}

/** Flattened bucket start, count pairs (a bucketed window). */
function bucketCounts(counted: RestoredWindow['counted'], bucketMs: number): number[] {
  const counts = new Map<number, number>();
  for (const [at, n] of counted) {
    const start = at - (at % bucketMs);
    counts.set(start, (counts.get(start) ?? 0) + n);
  }
  return [...counts].flat();
}

function parseReply(reply: unknown): BudgetAnswer {
  if (!Array.isArray(reply)) throw new DependencyUnavailableError('budget script gave no list');
  const [kind, first, second, third] = reply as [string, unknown, unknown, unknown];
  const number = (value: unknown) => Math.max(0, Number(value));
  switch (kind) {
    case 'missing':
      return { kind };
    case 'stale':
      return { kind, version: String(first) };
    case 'allowed':
      return { kind, remaining: number(first), resetMs: number(second), atMs: Number(third) };
    case 'probed':
      return { kind, remaining: number(first), resetMs: number(second) };
    case 'exhausted':
      return { kind, retryAfterMs: Math.max(1, number(first)), resetMs: number(second) };
    default:
      throw new DependencyUnavailableError(`budget script gave an unknown reply ${String(kind)}`);
  }
}
