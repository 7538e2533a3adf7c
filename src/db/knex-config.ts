import path from 'node:path';
import type { Knex } from 'knex';

/** Shared by the service and the knex CLI; migrations live in /migrations at the top level. */
export function knexConfig(databaseUrl: string, poolMax = 10): Knex.Config {
  return {
    client: 'pg',
    // JIT off: this service's queries are short, and Postgres's cost estimates for its JSON-fed
    // CTEs (json_to_recordset is assumed to yield 100 rows) are high enough to trigger JIT
    // compilation that costs 20-500 ms on a query that runs in under 10 (the budget rebuild).
    // Generic plans for named prepared statements from their first run, not their sixth: planning
    // the call trail's listing over every day's partition takes 5-10 ms, running it 1-2 ms, and
    // Postgres would otherwise plan it anew for each of a connection's first five runs. Queries
    // sent unnamed (all of knex's) are planned each time whatever this says.
    connection: {
      connectionString: databaseUrl,
      application_name: 'grant-broker',
      options: '-c jit=off -c plan_cache_mode=force_generic_plan',
    },
    pool: { min: 0, max: poolMax },
    acquireConnectionTimeout: 5000,
    migrations: {
      directory: path.resolve(__dirname, '../../migrations'),
      loadExtensions: [path.extname(__filename)],
      tableName: 'knex_migrations',
    },
  };
}
