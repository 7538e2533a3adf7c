import knex, { type Knex } from 'knex';
import { knexConfig } from './knex-config';

export type Database = Knex;

export function createDatabase(databaseUrl: string, poolMax: number): Database {
  return knex(knexConfig(databaseUrl, poolMax));
}

/** Creates the database named in the URL when it does not exist yet (first start, test runs). */
export async function ensureDatabaseExists(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = '/postgres';
  const admin = knex({ client: 'pg', connection: url.toString(), pool: { min: 0, max: 1 } });
  try {
    const found = await admin.raw('select 1 from pg_database where datname = ?', [name]);
    if (found.rowCount === 0) await admin.raw('create database ??', [name]);
  } finally {
    await admin.destroy();
  }
}

/** Whether Postgres answers (readiness). */
export async function pingDatabase(db: Database): Promise<void> {
  await db.raw('select 1');
}

export async function migrateToLatest(db: Database): Promise<void> {
  await db.migrate.latest();
}
