import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Redis } from 'ioredis';
import { DependencyUnavailableError } from '../http/dependency-failure';
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
  /** Unique per call: the member added to every level's window. */
  callId: string;
  /** Stored as the tree's version when the key is missing (first use, Redis restart). */
  freshVersion: string;
}

export type BudgetAnswer =
  | { kind: 'stale'; version: string }
  | { kind: 'allowed'; remaining: number; resetMs: number }
  | { kind: 'exhausted'; retryAfterMs: number; resetMs: number }
  | { kind: 'probed'; remaining: number; resetMs: number };

const COMMAND = 'grantBudgetWindow';

/** The script ships as a .lua file beside this module in src/ (tsc does not copy it into dist/). */
function loadScript(): string {
  const candidates = [
    path.join(__dirname, 'sliding-window.lua'),
    path.join(__dirname, '..', '..', '..', 'src', 'budget', 'sliding-window.lua'),
  ];
  const found = candidates.find((file) => existsSync(file));
  if (!found) throw new Error(`sliding-window.lua not found (looked in ${candidates.join(', ')})`);
  return readFileSync(found, 'utf8');
}

const SCRIPT = loadScript();

type ScriptCommand = (numberOfKeys: number, ...args: Array<string | number>) => Promise<unknown>;

/**
 * The one Redis round trip of a broker check: the version check of cached facts and the budget
 * of the whole chain in one atomic script. ioredis sends EVALSHA and falls back to EVAL on
 * NOSCRIPT, so a SCRIPT FLUSH or a Redis restart costs one extra send, never a failure.
 * Any Redis error (unreachable, slower than REDIS_COMMAND_TIMEOUT_MS) surfaces as
 * DependencyUnavailableError: the caller answers 503 and nothing is allowed.
 */
export class SlidingWindowBudget {
  private readonly command: ScriptCommand;

  constructor(private readonly redis: Redis) {
    if (!(COMMAND in redis)) redis.defineCommand(COMMAND, { lua: SCRIPT });
    this.command = (redis as unknown as Record<string, ScriptCommand>)[COMMAND]!.bind(redis);
  }

  async run(request: BudgetRequest): Promise<BudgetAnswer> {
    const keys = [treeVersionKey(request.rootId), ...request.levels.map((l) => windowKey(request.rootId, l.grantId))];
    const args = [request.expectedVersion, request.freshVersion, request.mode, request.callId];
    for (const level of request.levels) args.push(String(level.calls), String(level.windowMs));
    let reply: unknown;
    try {
      reply = await this.command(keys.length, ...keys, ...args);
    } catch (error) {
      throw new DependencyUnavailableError(`budget script failed: ${(error as Error).message}`);
    }
    return parseReply(reply);
  }

  /** Gives back the unit a call took at every level (its record could not be written). */
  async refund(rootId: string, levels: readonly BudgetLevel[], callId: string): Promise<void> {
    const pipeline = this.redis.pipeline();
    for (const level of levels) pipeline.zrem(windowKey(rootId, level.grantId), callId);
    await pipeline.exec();
  }
}

function parseReply(reply: unknown): BudgetAnswer {
  if (!Array.isArray(reply)) throw new DependencyUnavailableError('budget script gave no list');
  const [kind, first, second] = reply as [string, unknown, unknown];
  const number = (value: unknown) => Math.max(0, Number(value));
  switch (kind) {
    case 'stale':
      return { kind, version: String(first) };
    case 'allowed':
    case 'probed':
      return { kind, remaining: number(first), resetMs: number(second) };
    case 'exhausted':
      return { kind, retryAfterMs: Math.max(1, number(first)), resetMs: number(second) };
    default:
      throw new DependencyUnavailableError(`budget script gave an unknown reply ${String(kind)}`);
  }
}
