import type { Clock } from '../kernel/clock';
import type { Database } from '../db/database';
import type { PolicyEngine } from '../policy/engine';
import type { ApprovalWebhooks } from '../webhooks/approval-messages';
import type { ApprovalArgsVault } from './args-vault';
import type { InboxWaker } from './inbox-wait';

/** What the approvals domain uses, and nothing more. */
export interface ApprovalsDeps {
  db: Database;
  policy: PolicyEngine;
  clock: Clock;
  /** Opens a pending approval's kept arguments for its deciders. */
  argsVault: ApprovalArgsVault;
  /** Queues `approval.decided` for the pod's webhooks. */
  webhooks: ApprovalWebhooks;
  /** Wakes the inbox's long polls when an approval is requested on another replica. */
  waker: InboxWaker;
}
