// Drops this run's database and Redis keys (the shared services stay up for the next run).
const knex = require('knex');
const { Redis } = require('ioredis');

module.exports = async () => {
  if (process.env.KEEP_TEST_DATABASE) return;
  const url = new URL(process.env.DATABASE_URL);
  const name = url.pathname.slice(1);
  url.pathname = '/postgres';
  const admin = knex({ client: 'pg', connection: url.toString(), pool: { min: 0, max: 1 } });
  try {
    await admin.raw('drop database if exists ?? with (force)', [name]);
  } finally {
    await admin.destroy();
  }
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/0', { lazyConnect: true });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${process.env.REDIS_KEY_PREFIX}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
};
