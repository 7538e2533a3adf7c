import type { Knex } from 'knex';
import { TypeID } from 'typeid-js';

/**
 * The trail's tallies, so the console's overview reads a few hundred rows where the records of a
 * week are millions: `call_tallies`, checks per pod, UTC hour and decision (with the denial's reason
 * and, for an org rule's denial, the rule); `call_tree_tallies`, each tree's allowed calls per pod
 * and UTC day (which trees are busiest). Written by the service as it records checks
 * (src/grants/tally-writer.ts). The last 7 days of records already kept are counted here once (the
 * overview's longest range); org rules are not kept in a record, so those denials count under
 * their reason alone.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('call_tallies', (t) => {
    t.text('pod_id').notNullable();
    t.timestamp('hour', { useTz: true, precision: 0 }).notNullable();
    t.text('decision').notNullable().checkIn(['allowed', 'denied', 'awaiting_approval']);
    // '' rather than null: the columns are the primary key an upsert adds to.
    t.text('reason').notNullable().defaultTo('');
    t.text('org_rule').notNullable().defaultTo('');
    t.bigInteger('calls').notNullable();
    t.primary(['pod_id', 'hour', 'decision', 'reason', 'org_rule']);
  });
  await knex.schema.createTable('call_tree_tallies', (t) => {
    t.text('pod_id').notNullable();
    t.date('day').notNullable();
    t.text('root_id').notNullable();
    t.bigInteger('calls').notNullable();
    t.primary(['pod_id', 'day', 'root_id']);
  });

  const since = new Date(Date.now() - 7 * 86_400_000);
  const grants: Array<{ id: string; root_id: string; target_pod_id: string }> = await knex('grants').select(
    'id',
    'root_id',
    'target_pod_id',
  );
  if (grants.length === 0) return;
  await knex.raw('create temporary table tally_grants (uid uuid primary key, root_id text, pod_id text)');
  for (let i = 0; i < grants.length; i += 5_000) {
    const rows = grants
      .slice(i, i + 5_000)
      .map((g) => ({ uid: TypeID.fromString(g.id).toUUID(), root_id: g.root_id, pod_id: g.target_pod_id }));
    await knex('tally_grants').insert(rows);
  }
  // Outcome codes of call_records: pending 0, denied 1, succeeded 2, failed 3, awaiting_approval 4.
  await knex.raw(
    `insert into call_tallies (pod_id, hour, decision, reason, org_rule, calls)
     select g.pod_id, date_trunc('hour', r.requested_at),
            case r.outcome when 1 then 'denied' when 4 then 'awaiting_approval' else 'allowed' end,
            case when r.outcome = 1 then coalesce(r.reason, '') else '' end, '', count(*)
       from call_records r join tally_grants g on g.uid = r.grant_id
      where r.requested_at >= ?
      group by 1, 2, 3, 4`,
    [since],
  );
  await knex.raw(
    `insert into call_tree_tallies (pod_id, day, root_id, calls)
     select g.pod_id, (r.requested_at at time zone 'UTC')::date, g.root_id, count(*)
       from call_records r join tally_grants g on g.uid = r.grant_id
      where r.requested_at >= ? and r.outcome in (0, 2, 3)
      group by 1, 2, 3`,
    [since],
  );
  await knex.raw('drop table tally_grants');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('call_tree_tallies');
  await knex.schema.dropTable('call_tallies');
}
