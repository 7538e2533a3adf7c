import type { Logger } from '../kernel/log';
import type { RedisClient } from './client';

export interface RedisDurability {
  /** aof: every write is logged; rdb: periodic snapshots; none: a restart forgets everything. */
  persistence: 'aof' | 'rdb' | 'none' | 'unknown';
  /** `noeviction` is the safe one: any other policy may drop a budget window under memory pressure. */
  evictionPolicy: string | null;
}

function infoField(info: string, name: string): string | null {
  const match = new RegExp(`^${name}:(.*)$`, 'm').exec(info);
  return match?.[1]?.trim() ?? null;
}

/**
 * What Redis promises about the budget windows. A restart without persistence is survived (the
 * windows are rebuilt from the call trail), so this is reported, not required; managed Redis
 * often refuses CONFIG, which leaves `rdb` versus `none` unknown.
 */
export async function readRedisDurability(redis: RedisClient): Promise<RedisDurability> {
  const [persistenceInfo, memoryInfo] = await Promise.all([redis.info('persistence'), redis.info('memory')]);
  const evictionPolicy = infoField(memoryInfo, 'maxmemory_policy');
  if (infoField(persistenceInfo, 'aof_enabled') === '1') return { persistence: 'aof', evictionPolicy };
  try {
    const [, save] = (await redis.config('GET', 'save')) as [string, string];
    return { persistence: save.trim() === '' ? 'none' : 'rdb', evictionPolicy };
  } catch {
    return { persistence: 'unknown', evictionPolicy };
  }
}

/** A Redis that evicts keys under memory pressure may drop a budget window: say so at start. */
export async function warnOnEvictingRedis(redis: RedisClient, log: Logger): Promise<void> {
  const durability = await readRedisDurability(redis).catch(() => null);
  if (durability?.evictionPolicy && durability.evictionPolicy !== 'noeviction') {
    log.warn(
      { evictionPolicy: durability.evictionPolicy },
      'Redis may evict budget windows under memory pressure; set maxmemory-policy noeviction',
    );
  }
}
