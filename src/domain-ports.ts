import type { Knex } from 'knex';
import type { ApprovalsGrantReads } from './approvals/deps';
import { grantableConnection, loadConnectionFacts } from './connections/facts';
import type { Database } from './db/database';
import type { GrantsLookups } from './grants/deps';
import { brokerOfGrant, loadGrantFacts, loadGrantFactsMany } from './grants/facts';
import type { HumanPrincipal } from './kernel/principals';
import type { PolicyEngine } from './policy/engine';
import { authorizePodAction, type PodAction, type PodActionFacts } from './pods/access';
import { podAgentIds, podById, podMemberIds } from './pods/facts';
import { addAgentMember } from './pods/membership';
import type { RegistryPodPorts } from './registry/deps';
import { agentById } from './registry/facts';
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

/** What grants read of connections, pods and installed agents, each in the caller's transaction. */
export const grantLookups: GrantsLookups = {
  connectionFacts: (db, ids) => loadConnectionFacts(db, ids),
  grantableConnection: (db, id) => grantableConnection(db, id),
  podExists: async (db, podId) => (await podById(db, podId)) !== undefined,
  memberIds: (db, podId) => podMemberIds(db, podId),
  agentIds: (db, podId) => podAgentIds(db, podId),
  agent: (db, agentId) => agentById(db, agentId),
};

/** What approvals read of grants and pods. */
export function approvalGrantReads(db: Database): ApprovalsGrantReads {
  return {
    facts: (grantId) => loadGrantFacts(grantLookups, db, grantId),
    factsMany: (grantIds) => loadGrantFactsMany(grantLookups, db, grantIds),
    brokerOf: (grantId) => brokerOfGrant(db, grantId),
    memberIds: (podId) => podMemberIds(db, podId),
  };
}
