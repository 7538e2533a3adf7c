import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { RedisClient } from '../redis/client';
import { DependencyUnavailableError } from '../kernel/dependency';
import { treeCallsKey, treeLabelsKey, treeVersionKey, windowKey } from './keys';

export interface BudgetLevel {
  grantId: string;
  calls: number;
  windowMs: number;
}

/**
 * What a grant tree's earlier allowed calls left, as the budget script last returned it: the
 * labels org rules put on them (each with the Redis time it was first seen) and the calls per
 * tool in the root's window. `stamp` names the set of labels: a charge decided on another stamp
 * is refused (`session`) and decided again.
 */
export interface TreeSession {
  stamp: string;
  labels: Record<string, number>;
  calls: Record<string, number>;
}

/** A session no script has returned yet: its stamp matches none, so the first charge reads it. */
export const UNKNOWN_SESSION: TreeSession = Object.freeze({ stamp: '', labels: {}, calls: {} });

/** How a tree's session is kept (SESSION_LABEL_TTL_MS; the caps are fixed). */
export interface SessionShape {
  labelTtlMs: number;
  /** The most distinct live labels a tree holds: past it, a call that would add one is refused. */
  maxLabels: number;
  /** The calls per tool count in buckets of the root's window / this. */
  callBuckets: number;
}

export const DEFAULT_SESSION_SHAPE: SessionShape = { labelTtlMs: 24 * 3_600_000, maxLabels: 32, callBuckets: 24 };

export interface BudgetRequest {
  rootId: string;
  /**
   * The stamp of the labels the decision saw, the tool and what an allowed call adds; absent for
   * a budget alone (no decision read the session: nothing is checked or recorded of it).
   */
  session?: {
    stamp: string;
    tool: string;
    labels: readonly string[];
    /** The tool's count the decision read, when a rule read it: charged only if still the tree's. */
    seenCalls?: number;
  };
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
  | ({ session: TreeSession } & (
      | { kind: 'stale'; version: string }
      /** The tree's labels changed since the decision: nothing taken, decide again. */
      | { kind: 'session' }
      /** The call would take the tree past its labels cap: nothing taken. */
      | { kind: 'label_limit' }
      | { kind: 'allowed'; remaining: number; resetMs: number; atMs: number }
      /** `fullLevels`: the indices in the chain (the grant first) of the full windows. */
      | { kind: 'exhausted'; retryAfterMs: number; resetMs: number; fullLevels: number[] }
      | { kind: 'probed'; remaining: number; resetMs: number }
    ));

/**
 * A tree's session as the trail rebuilds it: its calls per tool in the root's window (each at its
 * `requested_at`), and whether it made allowed calls within a label's life, whose labels Redis
 * lost with it.
 */
export interface RestoredSession {
  rootWindowMs: number;
  calls: ReadonlyArray<{ tool: string; atMs: number; n: number }>;
  labelsMayBeLost: boolean;
}

/** A grant's window as the trail rebuilds it: [time, how many calls at that time] still counting. */
export interface RestoredWindow extends BudgetLevel {
  counted: ReadonlyArray<readonly [number, number]>;
}

/**
 * The shape of windows. Budgets up to `exactMaxCalls` calls keep the exact time of every allowed
 * call (a few bytes each); larger ones count per bucket, `buckets` a window, so no grant holds
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
    readonly sessionShape: SessionShape = DEFAULT_SESSION_SHAPE,
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
    const { rootId } = request;
    const session = request.session ?? { stamp: '*', tool: '', labels: [] };
    const keys = [
      treeVersionKey(rootId),
      ...request.levels.map((l) => windowKey(rootId, l.grantId)),
      treeLabelsKey(rootId),
      treeCallsKey(rootId),
    ];
    const rootWindowMs = request.levels[request.levels.length - 1]!.windowMs;
    const { labelTtlMs, maxLabels } = this.sessionShape;
    const args: Array<string | number> = [
      request.expectedVersion,
      request.mode,
      request.atMs ?? '',
      session.stamp,
      session.tool,
      labelTtlMs,
      this.callBucketMsOf(rootWindowMs),
      maxLabels,
      session.seenCalls ?? '',
      session.labels.length,
      ...session.labels,
    ];
    for (const level of request.levels) args.push(level.calls, level.windowMs, this.bucketMsOf(level));
    return parseReply(await this.call('grantBudgetWindow', keys, args));
  }

  /** The bucket length of a tree's calls per tool: a share of the root's window. */
  callBucketMsOf(rootWindowMs: number): number {
    return Math.max(1, Math.ceil(rootWindowMs / this.sessionShape.callBuckets));
  }

  /**
   * The tree's version, read before any of its facts are loaded (so they are at least as fresh),
   * and its session as Redis holds it, in one round trip; null when Redis has lost the tree,
   * whose windows must then be rebuilt from the call trail. The session read here may still
   * hold what the script would drop (an expired label, a bucket out of the window): more than
   * the truth, which the first charge corrects.
   */
  async treeState(rootId: string): Promise<{ version: string; session: TreeSession } | null> {
    let replies: Array<[Error | null, unknown]> | null;
    try {
      replies = await this.redis.pipeline().get(treeVersionKey(rootId)).hgetall(treeLabelsKey(rootId)).hgetall(treeCallsKey(rootId)).exec();
    } catch (error) {
      throw new DependencyUnavailableError(`tree version not read: ${(error as Error).message}`);
    }
    const failed = replies?.find(([error]) => error);
    if (!replies || failed) throw new DependencyUnavailableError(`tree version not read: ${failed?.[0]?.message ?? 'no reply'}`);
    const version = replies[0]![1] as string | null;
    if (version === null) return null;
    const labels = replies[1]![1] as Record<string, string>;
    const calls = replies[2]![1] as Record<string, string>;
    return { version, session: sessionOfHashes(labels, calls) };
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
  async restore(
    rootId: string,
    windows: readonly RestoredWindow[],
    freshVersion: string,
    session: RestoredSession = { rootWindowMs: windows.at(-1)?.windowMs ?? 1, calls: [], labelsMayBeLost: false },
  ): Promise<string> {
    const keys = [treeVersionKey(rootId), treeLabelsKey(rootId), treeCallsKey(rootId), ...windows.map((w) => windowKey(rootId, w.grantId))];
    const rootWindowMs = session.rootWindowMs;
    const callBucketMs = this.callBucketMsOf(rootWindowMs);
    const buckets = new Map<string, number>();
    for (const call of session.calls) {
      const field = `${call.tool}|${call.atMs - (call.atMs % callBucketMs)}`;
      buckets.set(field, (buckets.get(field) ?? 0) + call.n);
    }
    const args: Array<string | number> = [
      freshVersion,
      session.labelsMayBeLost ? '1' : '0',
      this.sessionShape.labelTtlMs,
      rootWindowMs + callBucketMs,
      buckets.size,
      ...[...buckets].flat(),
    ];
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

/** The session from the hashes themselves (see treeState). */
function sessionOfHashes(labels: Record<string, string>, calls: Record<string, string>): TreeSession {
  const session: TreeSession = { stamp: labels._v ?? '0', labels: {}, calls: {} };
  for (const [label, at] of Object.entries(labels)) if (label !== '_v') session.labels[label] = Number(at);
  for (const [field, n] of Object.entries(calls)) {
    const tool = field.slice(0, field.lastIndexOf('|'));
    session.calls[tool] = (session.calls[tool] ?? 0) + Number(n);
  }
  return session;
}

/** The session a script reply ends with: the stamp, label/time pairs, tool/count pairs. */
function sessionOfReply(stamp: unknown, labels: unknown, calls: unknown): TreeSession {
  const session: TreeSession = { stamp: String(stamp), labels: {}, calls: {} };
  const pairs = (flat: unknown, into: Record<string, number>) => {
    const list = Array.isArray(flat) ? (flat as unknown[]) : [];
    for (let i = 0; i + 1 < list.length; i += 2) into[String(list[i])] = Number(list[i + 1]);
  };
  pairs(labels, session.labels);
  pairs(calls, session.calls);
  return session;
}

function parseReply(reply: unknown): BudgetAnswer {
  if (!Array.isArray(reply)) throw new DependencyUnavailableError('budget script gave no list');
  const [kind, first, second, third, stamp, labels, calls] = reply as unknown[];
  const number = (value: unknown) => Math.max(0, Number(value));
  if (kind === 'missing') return { kind };
  const session = sessionOfReply(stamp, labels, calls);
  switch (kind) {
    case 'stale':
      return { kind, version: String(first), session };
    case 'session':
    case 'label_limit':
      return { kind, session };
    case 'allowed':
      return { kind, remaining: number(first), resetMs: number(second), atMs: Number(third), session };
    case 'probed':
      return { kind, remaining: number(first), resetMs: number(second), session };
    case 'exhausted': {
      const fullLevels = Array.isArray(third) ? (third as unknown[]).map(Number) : [];
      return { kind, retryAfterMs: Math.max(1, number(first)), resetMs: number(second), fullLevels, session };
    }
    default:
      throw new DependencyUnavailableError(`budget script gave an unknown reply ${String(kind)}`);
  }
}
