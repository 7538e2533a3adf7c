import knex from 'knex';
import path from 'node:path';
import { ensureDatabaseExists, type createDatabase, type migrateToLatest } from '../../src/db/database';

/**
 * The compiled migrations, as the run's database has them (global-setup.js): the built service and
 * admin CLI refuse a database whose recorded migrations are the TypeScript sources' names.
 */
function compiledMigrations(): { createDatabase: typeof createDatabase; migrateToLatest: typeof migrateToLatest } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(path.resolve(__dirname, '../../dist/src/db/database'));
}

/**
 * A database of a test file's own, beside the run's (`<run's database>_<suffix>`), for tests that
 * would disturb other files' rows in the shared one: dropping days, migrating down, rebuilding
 * indexes. `fresh` drops what an earlier run left and makes it empty; `migrated` makes it fresh and
 * migrated; `drop` removes it.
 */
export function ownDatabase(suffix: string): { url: string; fresh(): Promise<void>; migrated(): Promise<void>; drop(): Promise<void> } {
  const runUrl = new URL(process.env.DATABASE_URL!);
  const url = new URL(runUrl);
  url.pathname = `${runUrl.pathname}_${suffix}`;
  const drop = async () => {
    const adminUrl = new URL(runUrl);
    adminUrl.pathname = '/postgres';
    const admin = knex({ client: 'pg', connection: adminUrl.toString(), pool: { min: 0, max: 1 } });
    try {
      await admin.raw('drop database if exists ?? with (force)', [decodeURIComponent(url.pathname.slice(1))]);
    } finally {
      await admin.destroy();
    }
  };
  const fresh = async () => {
    await drop();
    await ensureDatabaseExists(url.toString());
  };
  return {
    url: url.toString(),
    drop,
    fresh,
    migrated: async () => {
      await fresh();
      const compiled = compiledMigrations();
      const db = compiled.createDatabase(url.toString(), 1);
      try {
        await compiled.migrateToLatest(db);
      } finally {
        await db.destroy();
      }
    },
  };
}
