import knex, { type Knex } from 'knex';
import { knexConfig } from '../../src/db/knex-config';
import { ownDatabase } from '../support/own-database';

/**
 * Migrations go up and down cleanly (issue 2, item 4), checked on a database of their own
 * (`<this run's database>_mig`) so the run's shared database is never rolled back under the
 * other test files.
 */
const FOUNDATION_TABLES = [
  'pods',
  'pod_members',
  'agents',
  'brokers',
  'broker_tokens',
  'runtime_tokens',
  'connections',
  'connection_tools',
  'grants',
  'call_records',
  'events',
];

const database = ownDatabase('mig');
let db: Knex;

async function existingTables(): Promise<string[]> {
  const rows = await db('information_schema.tables').where({ table_schema: 'public' }).select('table_name');
  return rows.map((row: { table_name: string }) => row.table_name);
}

beforeAll(async () => {
  await database.fresh();
  db = knex(knexConfig(database.url, 1));
});
afterAll(async () => {
  await db?.destroy();
  await database.drop();
});

describe('knex migrations', () => {
  it('go up: latest creates every table of the model', async () => {
    const [, applied] = await db.migrate.latest();
    expect(applied.length).toBeGreaterThan(0);
    expect(await existingTables()).toEqual(expect.arrayContaining(FOUNDATION_TABLES));
  });

  it('go down: rolling back every migration leaves only knex bookkeeping', async () => {
    const [, rolledBack] = await db.migrate.rollback(undefined, true);
    expect(rolledBack.length).toBeGreaterThan(0);
    expect((await existingTables()).sort()).toEqual(['knex_migrations', 'knex_migrations_lock']);
  });

  it('go up again after a full rollback', async () => {
    await db.migrate.latest();
    expect(await existingTables()).toEqual(expect.arrayContaining(FOUNDATION_TABLES));
    const [, pending] = (await db.migrate.list()) as [unknown[], unknown[]];
    expect(pending).toEqual([]);
  });

  it('keep the foreign keys the model relies on (a member of a missing pod is refused)', async () => {
    await expect(
      db('pod_members').insert({ pod_id: 'pod_missing', member_id: 'u', member_kind: 'human', role: 'owner', added_by: 'u' }),
    ).rejects.toMatchObject({ code: '23503' });
  });
});
