import type { RedisClient } from '../redis/client';
import { ApiError } from '../kernel/errors';
import { DependencyUnavailableError } from '../kernel/dependency';

// One count per key and window, started by the first request of the window (Redis time).
const FIXED_WINDOW = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {count, redis.call('PTTL', KEYS[1])}`;

/**
 * A fixed-window rate limit in Redis, shared by every replica: at most `limit` requests per key
 * per `windowMs`, then 429 `rate_limited` with Retry-After. A quota, not a budget: unlike call
 * budgets it need not be exact, and an attempt counts whether or not it then succeeds. Redis away:
 * 503, the request goes no further.
 */
export class RateLimit {
  constructor(
    private readonly redis: RedisClient,
    private readonly name: string,
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  async take(key: string): Promise<void> {
    let reply: unknown;
    try {
      // The key's hash tag keeps it on one Cluster slot of its own.
      reply = await this.redis.eval(FIXED_WINDOW, 1, `{rl:${this.name}:${key}}`, this.windowMs);
    } catch (error) {
      throw new DependencyUnavailableError(`rate limit failed: ${(error as Error).message}`);
    }
    const [count, ttl] = (reply as [number, number]).map(Number) as [number, number];
    if (count > this.limit) {
      const seconds = Math.max(1, Math.ceil((ttl > 0 ? ttl : this.windowMs) / 1000));
      throw new ApiError(
        'rate_limited',
        `at most ${this.limit} ${this.name} per ${this.windowMs} ms; retry in ${seconds} s`,
        {},
        { 'Retry-After': String(seconds) },
      );
    }
  }
}
