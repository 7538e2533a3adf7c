import type { ToolResourcePointers } from '../kernel/decisions/catalogue';
import type { ChainLink, ConnectionFact } from '../kernel/decisions/catalogue';

/**
 * What never changes about a grant once it exists: its place in the tree, its broker and
 * connection, target, audience rule, tools, write mode, budget and expiry. It is the Rego grant
 * fact of policies/lib/grants.rego without `revoked`, the one mutable column, which the tree's
 * facts carry.
 */
export type FixedLink = Omit<ChainLink, 'revoked'>;

/** The grant first, its root last. */
export type Chain = readonly FixedLink[];

/** What can change about a call's chain: exactly what the broker/check policy needs besides the chain. */
export interface MutableFacts {
  revokedIds: string[];
  connection: ConnectionFact;
  /** Resource pointers of the connection's tools that declare them, by tool name. */
  toolResources: Record<string, ToolResourcePointers>;
  /** Pods of the chain's targets the principal is a current member of. */
  memberOf: string[];
  /** desired_state of an agent principal; null for a user or an agent that is gone. */
  desiredState: 'running' | 'stopped' | null;
}

/** A call whose subject did not verify is refused by the policy; its facts are moot. */
export const NO_PRINCIPAL_FACTS: MutableFacts = Object.freeze({
  revokedIds: [],
  connection: { id: '', owner_id: '', kind: '', status: 'disconnected' as const, tools: {} },
  toolResources: {},
  memberOf: [],
  desiredState: null,
});
