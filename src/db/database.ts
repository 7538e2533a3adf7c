import knex, { type Knex } from 'knex';
import type { Logger } from '../kernel/log';
import { knexConfig } from './knex-config';

export type Database = Knex;

/** The first line of what knex reports: some of its messages carry the driver's stack below it. */
const firstLine = (message: unknown) =>
  String(message instanceof Error ? message.message : message)
    .split('\n', 1)[0]!
    .slice(0, 500);

/**
 * What knex reports of its pool and connections (a connection that ended, a session Postgres
 * refused), as one line of the service's log without a stack: knex would print it, stack and
 * all, on stdout. Such a failure fails requests closed on its own (503); the line is for operators.
 */
function knexLog(log: Logger): Knex.Config['log'] {
  const line = (message: unknown) => log.warn({ err: { message: firstLine(message) } }, 'database connection problem');
  return { warn: line, error: line, deprecate: (message: unknown) => log.warn(String(message)), debug: () => undefined };
}

export function createDatabase(databaseUrl: string, poolMax: number, log?: Logger): Database {
  return knex({ ...knexConfig(databaseUrl, poolMax), ...(log ? { log: knexLog(log) } : {}) });
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
