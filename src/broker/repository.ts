import { toConnectionFact, type ToolResourcePointers } from '../kernel/decisions/catalogue';
import type { Database } from '../db/database';
import type { ConnectionFact } from '../kernel/decisions/catalogue';
import type { CallPrincipal } from '../kernel/principals';
import { NO_PRINCIPAL_FACTS, type Chain, type MutableFacts } from './tree-facts';

/**
 * The broker check's read model: read-only, and the only SQL of the check's reads. It owns no
 * table; it reads grants (revoked_at), connections, connection_tools, pod_members, agents
 * (desired_state) and runtime_tokens (expires_at), whose owners write them.
 */

// One round trip for everything; lists travel as JSON text (knex would expand a bound array).
const TREE_FACTS_SQL = `
select
  (select coalesce(json_agg(id), '[]'::json) from grants
    where id in (select json_array_elements_text(?::json)) and revoked_at is not null) as revoked_ids,
  (select row_to_json(c) from (select id, owner_id, kind, status from connections where id = ?) c) as connection,
  (select coalesce(json_object_agg(name, access), '{}'::json) from connection_tools
    where connection_id = ?) as tools,
  (select coalesce(json_object_agg(name, resource) filter (where resource is not null), '{}'::json)
    from connection_tools where connection_id = ?) as tool_resources,
  (select coalesce(json_agg(pod_id), '[]'::json) from pod_members
    where member_id = ? and pod_id in (select json_array_elements_text(?::json))) as member_of,
  (select desired_state from agents where id = ?) as desired_state`;

interface TreeFactsRow {
  revoked_ids: string[];
  connection: Pick<ConnectionFact, 'id' | 'owner_id' | 'kind' | 'status'> | null;
  tools: ConnectionFact['tools'];
  tool_resources: Record<string, ToolResourcePointers>;
  member_of: string[];
  desired_state: 'running' | 'stopped' | null;
}

/** What can change about a chain for one principal, in one round trip. */
export async function readTreeFacts(
  db: Database,
  call: { chain: Chain; principal: CallPrincipal; podIds: readonly string[] },
): Promise<MutableFacts> {
  const connectionId = call.chain[0]!.connection_id;
  const result = await db.raw<{ rows: TreeFactsRow[] }>(TREE_FACTS_SQL, [
    JSON.stringify(call.chain.map((g) => g.id)),
    connectionId,
    connectionId,
    connectionId,
    call.principal.id,
    JSON.stringify(call.podIds),
    call.principal.kind === 'agent' ? call.principal.id : null,
  ]);
  const row = result.rows[0]!;
  return {
    revokedIds: row.revoked_ids,
    // A connection that is gone is as good as disconnected: nothing is allowed through it.
    connection: row.connection ? toConnectionFact(row.connection, row.tools) : { ...NO_PRINCIPAL_FACTS.connection },
    toolResources: row.tool_resources,
    memberOf: row.member_of,
    desiredState: row.desired_state,
  };
}

/** When a verified runtime token expires (ms), or null when it never does. */
export async function runtimeTokenExpiry(db: Database, tokenId: string): Promise<number | null> {
  const row = await db('runtime_tokens').where('id', tokenId).first<{ expires_at: Date | null } | undefined>('expires_at');
  return row?.expires_at ? row.expires_at.getTime() : null;
}
