import type { Knex } from 'knex';
import type { GrantsDeps } from './deps';
import { emitEvent, type EventType } from '../events/outbox';
import { readDecision } from './access';
import type { GrantFacts } from './facts';

/**
 * Grant events go to the installed agents that can read the grant. Who can read
 * is the read policy's call, so it is asked once per installed agent of the pod rather than
 * re-deciding "pod grant: every agent, seat grant: the seat" here.
 */
export async function emitGrantEvent(
  trx: Knex.Transaction,
  deps: GrantsDeps,
  type: Extract<EventType, 'grant.created' | 'grant.attenuated' | 'grant.revoked'>,
  grant: GrantFacts,
  data: Record<string, unknown>,
): Promise<void> {
  const podId = grant.chain[0]?.target.pod_id;
  if (!podId) return;
  const agentIds = await deps.lookups.agentIds(trx, podId);
  const readers = agentIds.filter((id) => readDecision(deps, { kind: 'agent', id }, grant).allow);
  await emitEvent(trx, { type, podId, data, agentIds: readers });
}
