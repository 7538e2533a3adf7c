import type { Knex } from 'knex';
import type { CacheInvalidation } from '../cache/invalidation';
import type { Clock } from '../kernel/clock';
import type { Database } from '../db/database';
import type { HumanPrincipal } from '../kernel/principals';
import type { PolicyEngine } from '../policy/engine';
import type { PodAction } from '../pods/access';

export type { PodAction };

/** What the agent registry uses, and nothing more (who may act is `pods/access`'s call). */
export interface RegistryDeps {
  db: Database;
  policy: PolicyEngine;
  invalidation: CacheInvalidation;
  clock: Clock;
  /** What the registry asks of pods/: a port, filled in composition.ts (src/domain-ports.ts). */
  pods: RegistryPodPorts;
}

export interface RegistryPodPorts {
  /** pods/access's answer on an action in a pod, enforced: a pod the caller is not in is a 404. */
  authorize(caller: HumanPrincipal, podId: string, action: PodAction): Promise<unknown>;
  /** The pod's installed agents, read in the caller's transaction. */
  agentIds(trx: Knex.Transaction, podId: string): Promise<string[]>;
  /** Seats an installed agent in its pod, in the install's transaction. */
  addAgentMember(trx: Knex.Transaction, podId: string, agentId: string, addedBy: string): Promise<void>;
}
