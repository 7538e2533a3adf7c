// One fresh database and one Redis key prefix per test run, so runs never collide and whatever an
// earlier run left behind does not matter. Uses the compiled migrations (scripts/test.sh builds first).
const { generateKeyPairSync, randomBytes } = require('node:crypto');

module.exports = async () => {
  const base = process.env.TEST_DATABASE_BASE_URL ?? 'postgres://postgres@127.0.0.1:5432/';
  const name = `gb_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  process.env.DATABASE_URL = `${base}${name}`;
  process.env.REDIS_KEY_PREFIX = `gbtest:${name}:`;
  process.env.NODE_ENV = 'test';
  // Production refuses the development sealing key: the production replicas tests start use this one.
  process.env.APPROVAL_ARGS_KEY ??= randomBytes(32).toString('base64');
  // …and signs the trail's checkpoints with a key it is given: one for the run.
  process.env.TRAIL_SIGNING_KEY ??= generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  // Test files share one database: only the webhook tests deliver the outbox, each by its own clock.
  process.env.WEBHOOK_DELIVERY = 'false';
  // Two test files run at once on a busy machine, and a Redis reply can then wait past the 250 ms
  // production default: the check would rightly answer 503, and a test about something else would
  // fail for the machine's load. The tests of that timeout (failures, partition) set it themselves.
  process.env.REDIS_COMMAND_TIMEOUT_MS ??= '2000';
  // Every service a test starts shares one Postgres and its connection limit (100 by default): two
  // files at once, each with two or three services whose pools may grow to 20 under a burst, can
  // take them all, and any test then fails on "too many clients". Five each is plenty here.
  process.env.DATABASE_POOL_MAX ??= '5';
  const { createDatabase, ensureDatabaseExists, migrateToLatest } = require('../../dist/src/db/database');
  await ensureDatabaseExists(process.env.DATABASE_URL);
  const db = createDatabase(process.env.DATABASE_URL, 2);
  try {
    await migrateToLatest(db);
  } finally {
    await db.destroy();
  }
};
