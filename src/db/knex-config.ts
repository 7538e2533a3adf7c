import path from 'node:path';
import type { Knex } from 'knex';

/** Shared by the service and the knex CLI; migrations live in /migrations at the top level. */
export function knexConfig(databaseUrl: string, poolMax = 10): Knex.Config {
  return {
    client: 'pg',
    connection: { connectionString: databaseUrl, application_name: 'grant-broker' },
    pool: { min: 0, max: poolMax },
    acquireConnectionTimeout: 5000,
    migrations: {
      directory: path.resolve(__dirname, '../../migrations'),
      loadExtensions: [path.extname(__filename)],
      tableName: 'knex_migrations',
    },
  };
}
