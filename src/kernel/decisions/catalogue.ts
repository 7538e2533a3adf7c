import { approvalsDecide } from './approvals';
import { brokerCharge, brokerCheck, brokerOutcome } from './broker';
import { connectionsAccess, podsAccess, runtimeAccess } from './access';
import type { DecisionDefinition } from './define';
import { policyPlayground, policyStatus } from './policy';
import { grantsAttenuate, grantsCreate, grantsList, grantsRead, grantsRevoke } from './grants';

export * from './define';
export * from './facts';
export * from './explanation';
export * from './org';

/**
 * Every decision the service asks the policy for, once. From here come the TypeScript types of
 * `PolicyEngine.evaluate`, the entrypoints the build compiles and a loaded module must have, and
 * the JSON Schema of each input that `opa check` holds the Rego to (policies/schemas/).
 */
export const decisions = {
  approvalsDecide,
  brokerCharge,
  brokerCheck,
  brokerOutcome,
  connectionsAccess,
  grantsAttenuate,
  grantsCreate,
  grantsList,
  grantsRead,
  grantsRevoke,
  podsAccess,
  policyPlayground,
  policyStatus,
  runtimeAccess,
} satisfies Record<string, DecisionDefinition>;

export const catalogue: readonly DecisionDefinition[] = Object.values(decisions);
