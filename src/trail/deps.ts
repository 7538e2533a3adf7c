import type { Clock } from '../kernel/clock';
import type { Database } from '../db/database';
import type { AgentPrincipal, HumanPrincipal } from '../kernel/principals';
import type { PolicyEngine } from '../policy/engine';
import type { PendingCalls } from './pending-calls';

/** A grant as the trail needs it once its reader is known: its id and its budget. */
export interface ReadableGrant {
  id: string;
  budget: { calls: number; windowMs: number };
}

/** What the call trail uses, and nothing more. */
export interface TrailDeps {
  db: Database;
  policy: PolicyEngine;
  clock: Clock;
  /** TRAIL_TREE: whether records and outcomes become leaves of the trail's Merkle tree (off: the benchmark's baseline). */
  tree: boolean;
  /** What the checks wrote pending, remembered for their outcomes (a speed-up; none: every batch reads). */
  pendingCalls?: PendingCalls;
  /**
   * The grants domain's own scope check (`grants/read`): the grant when this caller may read it,
   * else the 404 that says nothing more. A port, filled by composition.ts: a grant's trail is
   * shown exactly to whoever may read the grant, and the trail knows nothing else of grants.
   */
  readableGrant(principal: HumanPrincipal | AgentPrincipal, grantId: string): Promise<ReadableGrant>;
}
