import type { Clock } from '../kernel/clock';
import type { Database } from '../db/database';
import type { PolicyEngine } from '../policy/engine';

/** What the approvals domain uses, and nothing more. */
export interface ApprovalsDeps {
  db: Database;
  policy: PolicyEngine;
  clock: Clock;
}
