import { createHash, randomBytes } from 'node:crypto';
import type { RedisClient } from '../redis/client';
import { DependencyUnavailableError } from '../kernel/dependency';

/** How long a printed console link works: long enough to open it, short enough not to lie around. */
export const CONSOLE_LINK_TTL_MS = 10 * 60 * 1000;

const KEY = 'console-link:';
const DEMO_USERS = 'console-link-demo-users';
/** 256 bits: the code is a bearer secret for a sign-in, like a runtime token. */
const CODE_BYTES = 32;
const CODE_PATTERN = /^csl_[A-Za-z0-9_-]{43}$/;

const hashOf = (code: string) => createHash('sha256').update(code).digest('hex');

/**
 * One-time sign-in codes for development: the admin command makes one for a user, the console
 * trades it for a session once. Redis keeps only the code's SHA-256 (a leaked key list signs no one
 * in) with a 10-minute expiry; GETDEL makes the trade single-use across every replica at once.
 */
export class ConsoleLinks {
  constructor(private readonly redis: RedisClient) {}

  async create(userId: string): Promise<{ code: string; expiresAt: Date }> {
    const code = `csl_${randomBytes(CODE_BYTES).toString('base64url')}`;
    await this.redis.set(KEY + hashOf(code), userId, 'PX', CONSOLE_LINK_TTL_MS);
    return { code, expiresAt: new Date(Date.now() + CONSOLE_LINK_TTL_MS) };
  }

  /** The demo world's users, by role, for `console-link --as owner|member` (ids only, no secret). */
  async rememberDemoUsers(users: { owner: string; member: string }): Promise<void> {
    await this.redis.hset(DEMO_USERS, users);
  }

  async demoUser(role: 'owner' | 'member'): Promise<string | null> {
    return this.redis.hget(DEMO_USERS, role);
  }

  /** The user the code signs in, once; null for a malformed, unknown, used or expired code. */
  async redeem(code: string): Promise<string | null> {
    if (!CODE_PATTERN.test(code)) return null;
    try {
      return await this.redis.getdel(KEY + hashOf(code));
    } catch (error) {
      throw new DependencyUnavailableError('redis', { cause: error });
    }
  }
}
