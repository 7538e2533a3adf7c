import type { Clock } from '../kernel/clock';
import type { Database } from '../db/database';
import type { PolicyEngine } from '../policy/engine';
import type { ApprovalArgsVault } from './args-vault';
import type { InboxWaker } from './inbox-wait';

/** What the approvals domain uses, and nothing more. */
export interface ApprovalsDeps {
  db: Database;
  policy: PolicyEngine;
  clock: Clock;
  /** Opens a pending approval's kept arguments for its deciders. */
  argsVault: ApprovalArgsVault;
  /** The approval's page in the web console, which its webhook messages link to. */
  consoleUrl: (approvalId: string) => string;
  /** Wakes the inbox's long polls when an approval is requested on another replica. */
  waker: InboxWaker;
}
