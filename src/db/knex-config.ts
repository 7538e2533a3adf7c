import path from 'node:path';
import type { Knex } from 'knex';

/** Shared by the service and the knex CLI; migrations live in /migrations at the top level. */
export function knexConfig(databaseUrl: string, poolMax = 10): Knex.Config {
  return {
    client: 'pg',
    // JIT off: this service's queries are short, and Postgres's cost estimates for its JSON-fed
    // CTEs (json_to_recordset is assumed to yield 100 rows) are high enough to trigger JIT
    // compilation that costs far more than the query it compiles (the budget rebuild's).
    connection: { connectionString: databaseUrl, application_name: 'grant-broker', options: '-c jit=off' },
    pool: { min: 0, max: poolMax },
    acquireConnectionTimeout: 5000,
    migrations: {
      directory: path.resolve(__dirname, '../../migrations'),
      loadExtensions: [path.extname(__filename)],
      tableName: 'knex_migrations',
    },
  };
}
