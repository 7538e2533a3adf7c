import type { Knex } from 'knex';
import type { Database } from './db/database';
import type { HumanPrincipal } from './kernel/principals';
import type { PolicyEngine } from './policy/engine';
import { authorizePodAction, type PodAction, type PodActionFacts } from './pods/access';
import { podAgentIds } from './pods/facts';
import { addAgentMember } from './pods/membership';
import type { RegistryPodPorts } from './registry/deps';
import type { WebhooksPodPorts } from './webhooks/deps';

/**
 * The ports by which one domain asks another, filled from the domain that answers: each domain
 * declares what it needs in its deps.ts and imports no other, so the domains stand side by side
 * and a change inside one reaches the others only through what is written here.
 */
export function podPorts(deps: { db: Database; policy: PolicyEngine }): RegistryPodPorts & WebhooksPodPorts {
  return {
    authorize: (caller: HumanPrincipal, podId: string, action: PodAction, facts?: PodActionFacts, trx?: Knex.Transaction) =>
      authorizePodAction(deps, caller, podId, action, facts, trx),
    agentIds: (trx, podId) => podAgentIds(trx, podId),
    addAgentMember: (trx, podId, agentId, addedBy) => addAgentMember(trx, podId, agentId, addedBy),
  };
}
