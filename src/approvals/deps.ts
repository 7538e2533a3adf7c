import type { Clock } from '../kernel/clock';
import type { Database } from '../db/database';
import type { ConnectionFact, GrantFact } from '../kernel/decisions/catalogue';
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
  /** What approvals read of grants. */
  grants: ApprovalsGrantReads;
}

/** An approval's grant as approvals/decide reads it: its chain (the grant first) and connection. */
export interface ApprovalGrant {
  grant: { target_pod_id: string };
  chain: GrantFact[];
  connection: ConnectionFact;
}

/** What the approvals domain reads of grants and pods: a port, filled in composition.ts (src/domain-ports.ts). */
export interface ApprovalsGrantReads {
  /** A grant's facts; undefined when there is no such grant. */
  facts(grantId: string): Promise<ApprovalGrant | undefined>;
  /** Several grants' facts in one chain query; unknown ids are absent. */
  factsMany(grantIds: readonly string[]): Promise<Map<string, ApprovalGrant>>;
  /** The broker a grant's calls go through; undefined when there is no such grant. */
  brokerOf(grantId: string): Promise<string | undefined>;
  /** Current members of a pod, humans and installed agents. */
  memberIds(podId: string): Promise<string[]>;
}
