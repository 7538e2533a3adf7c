import knex, { type Knex } from 'knex';
import { knexConfig } from '../../src/db/knex-config';
import { newId, newIdAt } from '../../src/kernel/ids';
import { callRecordsAfter } from '../../src/trail/repositories/call-record-listings';
import { findCallRecord } from '../../src/trail/repositories/call-records';
import { uuidOf } from '../../src/trail/repositories/codec';
import { ownDatabase } from '../support/own-database';

/**
 * The migration that gives a record's policy decision a column of its own, on a trail with rows
 * in it (live and held): before it, `approval_id` held an approval's UUID (v7) or, for a call
 * allowed without one, the decision's (v4). After it, the repository reads an approval id or
 * null there and the decision in `decision_id`; the way down gives back exactly the rows it
 * found. On a database of its own (`<run's database>_decision`).
 */
const MIGRATION = '20261126120000_call_record_decision_id';
const database = ownDatabase('decision');
let db: Knex;

beforeAll(async () => {
  await database.fresh();
  db = knex(knexConfig(database.url, 2));
  for (;;) {
    const [, pending] = (await db.migrate.list()) as [unknown[], Array<{ file: string }>];
    if (!pending[0] || pending[0].file.startsWith(MIGRATION)) break;
    await db.migrate.up();
  }
});
afterAll(async () => {
  await db?.destroy();
  await database.drop();
});

/** What `approval_id` held, by case, and the outcome code each record has. */
const CASES = [
  { name: 'allowed, no approval', outcome: 0, holds: 'decision' },
  { name: 'allowed and completed', outcome: 2, holds: 'decision' },
  { name: 'allowed, failed', outcome: 3, holds: 'decision' },
  { name: 'allowed through an approval', outcome: 0, holds: 'approval' },
  { name: 'waiting for an approval', outcome: 4, holds: 'approval' },
  { name: 'denied', outcome: 1, holds: 'nothing' },
] as const;

const dashed = (hex: string) => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;

describe('the decision id migration', () => {
  it('moves a decision out of approval_id into decision_id, leaves approvals where they are, and puts everything back on the way down', async () => {
    const grantId = newId('grant');
    const made = await db.raw<{ rows: Array<{ code: number }> }>(
      `insert into call_record_shapes (tool, principal_kind, principal_id) values ('repos.read_file', 1, 'agt_x') returning code`,
    );
    const shape = made.rows[0]!.code;
    const now = Date.now();
    const rows = ['call_records', 'held_call_records'].flatMap((table, t) =>
      CASES.map((c, i) => {
        const at = new Date(now - (t * CASES.length + i) * 1000);
        const approvalId = c.holds === 'approval' ? newId('approval') : undefined;
        const decisionId = c.holds === 'decision' ? crypto.randomUUID() : undefined;
        return {
          table,
          c,
          approvalId,
          decisionId,
          row: {
            id: uuidOf('call', newIdAt('call', at.getTime())),
            grant_id: uuidOf('grant', grantId),
            shape,
            outcome: c.outcome,
            reason: c.outcome === 1 ? 'tool_not_allowed' : null,
            approval_id: approvalId ? uuidOf('approval', approvalId) : decisionId ? decisionId.replaceAll('-', '') : null,
            args_digest: Buffer.alloc(32, i),
            requested_at: at,
          },
        };
      }),
    );
    for (const { table, row } of rows) await db(table).insert(row);
    const stored = async (table: string) =>
      (await db(table).select('id', 'outcome', 'approval_id').orderBy('id')) as Array<{
        id: string;
        outcome: number;
        approval_id: string | null;
      }>;
    const before = { live: await stored('call_records'), held: await stored('held_call_records') };

    // Up through it and whatever later migrations add (the repository reads today's columns), as a deployment would.
    await db.migrate.latest();
    const read = await callRecordsAfter(db, grantId, null, 100);
    expect(read).toHaveLength(rows.length);
    for (const { c, approvalId, decisionId, row } of rows) {
      const record = read.find((r) => uuidOf('call', r.id) === row.id)!;
      expect({ case: c.name, approval: record.approval_id, decision: record.decision_id }).toEqual({
        case: c.name,
        approval: approvalId ?? null,
        decision: decisionId ?? null,
      });
    }
    // A record pending across the upgrade still completes through the repository, its decision kept.
    const pending = rows.find(({ table, c }) => table === 'call_records' && c.holds === 'decision')!;
    const found = await findCallRecord(db, read.find((r) => uuidOf('call', r.id) === pending.row.id)!.id);
    expect(found).toMatchObject({ approval_id: null, decision_id: pending.decisionId });
    const columns = await db.raw<{ rows: Array<{ table_name: string }> }>(
      `select table_name from information_schema.columns where column_name = 'decision_id' order by 1`,
    );
    expect(columns.rows.map((r) => r.table_name)).toEqual(expect.arrayContaining(['call_records', 'held_call_records']));

    // Records written after the upgrade name their decision whatever the answer; down, only an
    // allowed call's decision goes back into approval_id, as the one column held it.
    const later = [
      { outcome: 0, decision: crypto.randomUUID() },
      { outcome: 1, decision: crypto.randomUUID() },
    ].map(({ outcome, decision }, i) => ({
      id: uuidOf('call', newIdAt('call', now + 1000 + i)),
      grant_id: uuidOf('grant', grantId),
      shape,
      outcome,
      reason: outcome === 1 ? 'budget_exhausted' : null,
      decision_id: decision.replaceAll('-', ''),
      args_digest: Buffer.alloc(32, 9),
      requested_at: new Date(now + 1000 + i),
    }));
    await db('call_records').insert(later);

    // Down to just before it: the later migrations first, then this one.
    const completed = async () => ((await db.migrate.list()) as [Array<{ name: string }>, unknown[]])[0];
    while ((await completed()).some((migration) => migration.name.startsWith(MIGRATION))) await db.migrate.down();
    const asOld = [
      ...before.live,
      ...later.map((r) => ({ id: dashed(r.id), outcome: r.outcome, approval_id: r.outcome === 1 ? null : dashed(r.decision_id) })),
    ];
    expect(await stored('call_records')).toEqual(asOld.sort((a, b) => a.id.localeCompare(b.id)));
    expect(await stored('held_call_records')).toEqual(before.held);
    expect(before.live.filter((r) => r.approval_id !== null)).toHaveLength(5);
    await db.migrate.latest();
  });
});
