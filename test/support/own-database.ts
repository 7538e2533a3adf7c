import knex from 'knex';
import { ensureDatabaseExists } from '../../src/db/database';

/**
 * A database of a test file's own, beside the run's (`<run's database>_<suffix>`), for tests that
 * would disturb other files' rows in the shared one: dropping days, migrating down, rebuilding
 * indexes. `fresh` drops what an earlier run left and makes it empty; `drop` removes it.
 */
export function ownDatabase(suffix: string): { url: string; fresh(): Promise<void>; drop(): Promise<void> } {
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
  return {
    url: url.toString(),
    drop,
    fresh: async () => {
      await drop();
      await ensureDatabaseExists(url.toString());
    },
  };
}
