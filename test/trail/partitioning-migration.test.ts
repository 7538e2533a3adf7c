import knex, { type Knex } from 'knex';
import { knexConfig } from '../../src/db/knex-config';
import { callRecordsAfter } from '../../src/trail/repositories/call-record-listings';
import { findCallRecord } from '../../src/trail/repositories/call-records';
import { newId } from '../../src/kernel/ids';
import { ownDatabase } from '../support/own-database';

/**
 * The partitioned trail's migration on a table with rows in it: the database stops at the
 * migration before it, rows go in through the old schema (text ids, `sha256:` text, every
 * outcome, both principal kinds, an approval id and a decision id, three different days), the
 * migration runs, and every row reads back the same through the new repository; the way down
 * gives the same rows back in the old schema. On a database of its own (`<run's database>_trail`).
 */
const PARTITIONING = '20261125100000_partitioned_call_trail';
const database = ownDatabase('trail');
let db: Knex;

/** Applies migrations one by one until the next one is `name`. */
async function migrateUpTo(name: string): Promise<void> {
  for (;;) {
    const [, pending] = (await db.migrate.list()) as [unknown[], Array<{ file: string }>];
    if (!pending[0] || pending[0].file.startsWith(name)) return;
    await db.migrate.up();
  }
}

beforeAll(async () => {
  await database.fresh();
  db = knex(knexConfig(database.url, 2));
});
afterAll(async () => {
  await db?.destroy();
  await database.drop();
});

const DAY = 86_400_000;

async function oldWorld() {
  const [pod, broker, connection, grant, child, agent] = [
    newId('pod'),
    newId('broker'),
    newId('connection'),
    newId('grant'),
    newId('grant'),
    newId('agent'),
  ];
  await db('pods').insert({ id: pod, name: 'p', created_by: 'u' });
  await db('brokers').insert({ id: broker, name: 'b' });
  await db('connections').insert({
    id: connection,
    owner_id: 'u',
    kind: 'code-host',
    broker_id: broker,
    installation_id: 'i1',
    external_installation_id: 'x1',
  });
  const grantRow = (id: string, parent: string | null) => ({
    id,
    parent_id: parent,
    root_id: grant,
    connection_id: connection,
    installation_id: 'i1',
    broker_id: broker,
    target_kind: 'pod',
    target_id: pod,
    target_pod_id: pod,
    audience_mode: 'members',
    tools: ['repos.read_file'],
    write_mode: 'approve',
    budget_calls: 10,
    budget_window_ms: 60_000,
    expires_at: new Date(Date.now() + DAY),
    granted_by: 'u',
    created_by: 'u',
  });
  await db('grants').insert(grantRow(grant, null));
  await db('grants').insert(grantRow(child, grant));
  return { grant, child, agent };
}

describe('the partitioned call trail migration', () => {
  it('converts every row of the old table, and converts them back on the way down', async () => {
    await migrateUpTo(PARTITIONING);
    const { grant, child, agent } = await oldWorld();
    const now = Date.now();
    const outcomes = ['pending', 'denied', 'succeeded', 'failed', 'awaiting_approval'];
    const old = Array.from({ length: 30 }, (_, i) => {
      const at = new Date(now - (i % 3) * DAY - i * 1000);
      const outcome = outcomes[i % outcomes.length]!;
      const done = outcome === 'succeeded' || outcome === 'failed';
      return {
        id: newId('call'),
        grant_id: i % 2 ? child : grant,
        tool: i % 4 ? 'repos.read_file' : 'pulls.merge',
        principal_kind: i % 3 ? 'agent' : 'user',
        principal_id: i % 3 ? agent : `user-${i}@example.test`,
        outcome,
        reason: outcome === 'denied' ? 'tool_not_allowed' : outcome === 'awaiting_approval' ? 'approval_required' : 'allowed',
        approval_id: outcome === 'awaiting_approval' ? newId('approval') : outcome === 'denied' ? null : crypto.randomUUID(),
        error_code: outcome === 'failed' ? 'upstream:timeout' : null,
        args_digest: `sha256:${i.toString(16).padStart(64, 'a')}`,
        requested_at: at,
        completed_at: done ? new Date(at.getTime() + 50) : null,
        duration_ms: done ? 42 : null,
      };
    });
    await db('call_records').insert(old);

    // Up through the partitioning and whatever later migrations add, as a deployment would.
    await db.migrate.latest();
    const { rows } = await db.raw<{ rows: Array<{ relkind: string }> }>(`select relkind from pg_class where relname = 'call_records'`);
    expect(rows).toEqual([{ relkind: 'p' }]);
    const read = [...(await callRecordsAfter(db, grant, null, 100)), ...(await callRecordsAfter(db, child, null, 100))];
    // Columns added after the conversion read back null for the converted rows.
    // Rows older than the trail's tree have no leaf; what a leaf would hold is read beside them.
    const withoutJoin = read.map(
      ({
        approval_decided_by: _,
        credential_fingerprint: __,
        credential_expires_at: ___,
        leaf_index,
        outcome_leaf_index,
        answered,
        root_id,
        ...row
      }) => {
        expect([__, ___, leaf_index, outcome_leaf_index]).toEqual([null, null, null, null]);
        const decision = { denied: 'deny', awaiting_approval: 'approval_required' }[row.outcome as string] ?? 'allow';
        expect(answered).toEqual({ decision, reason: row.reason });
        expect(root_id).toEqual(expect.stringMatching(/^grt_/));
        return row;
      },
    );
    const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id);
    // A later migration (20261126120000) moved the decision of an allowed call into a column of its own.
    const split = old.map(({ approval_id, ...row }) =>
      approval_id?.startsWith('apr_') || approval_id === null
        ? { ...row, approval_id, decision_id: null }
        : { ...row, approval_id: null, decision_id: approval_id },
    );
    expect(withoutJoin.sort(byId)).toEqual(split.sort(byId));
    // A record pending across the upgrade is found by its id for its outcome: its id was minted
    // within a second of its time, though not from the same reading of the clock.
    expect(await findCallRecord(db, old[0]!.id)).toMatchObject({ id: old[0]!.id, outcome: 'pending' });
    const days = await db.raw<{ rows: Array<{ n: string }> }>(
      `select count(*) as n from pg_inherits where inhparent = 'call_records'::regclass`,
    );
    expect(Number(days.rows[0]!.n)).toBeGreaterThanOrEqual(4); // the rows' three days, later ones, the default

    // Down to just before the conversion: the later migrations first, then the conversion itself.
    const completed = async () => ((await db.migrate.list()) as [Array<{ name: string }>, unknown[]])[0];
    while ((await completed()).some((migration) => migration.name.startsWith(PARTITIONING))) await db.migrate.down();
    const back = await db('call_records').select('*');
    expect(back.sort(byId)).toEqual([...old].sort(byId));
    await db.migrate.latest();
  });
});
