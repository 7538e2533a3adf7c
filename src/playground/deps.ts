import type { DecisionEvent } from '../policy/decision-log';
import type { PolicyEngine } from '../policy/engine';

/** What the policy playground uses: the serving policy and its decision log, and who is an admin. */
export interface PlaygroundDeps {
  policy: Pick<PolicyEngine, 'evaluate' | 'tryOut'>;
  /** The newest broker check events this replica logged (arguments masked as logged). */
  recentChecks(limit: number): DecisionEvent[];
  /** SECURITY_ADMINS: people named by the operator. */
  securityAdmins: readonly string[];
  /** Whether a person is an owner or an admin of at least one pod (the pods domain's fact). */
  isPodAdmin(userId: string): Promise<boolean>;
  /** POLICY_BUNDLE_MAX_BYTES: an uploaded candidate is bounded as a fetched bundle is. */
  maxBundleBytes: number;
}
