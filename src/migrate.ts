import { loadConfig } from './config';
import { createDatabase, ensureDatabaseExists } from './db/database';

/** `npm run migrate` (creates the database if needed) and `npm run migrate -- --rollback-all`. */
async function main(): Promise<void> {
  const config = loadConfig();
  await ensureDatabaseExists(config.DATABASE_URL);
  const db = createDatabase(config.DATABASE_URL, 1);
  try {
    if (process.argv.includes('--rollback-all')) {
      const [, rolledBack] = await db.migrate.rollback(undefined, true);
      console.log(`rolled back ${rolledBack.length} migration(s)`);
    } else {
      const [, applied] = await db.migrate.latest();
      console.log(applied.length > 0 ? `applied: ${applied.join(', ')}` : 'database is up to date');
    }
  } finally {
    await db.destroy();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
