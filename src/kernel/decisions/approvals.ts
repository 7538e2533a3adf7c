import { z } from 'zod';
import { CallPrincipalFact } from './broker';
import { defineDecision, verdict } from './define';
import { GrantFacts, Millis } from './facts';

/** A call as an approval binds it: what finds the open approval of the identical call. */
export interface ApprovalBinding {
  grantId: string;
  tool: string;
  principal: { kind: 'user' | 'agent'; id: string };
  argsDigest: string;
  now: Date;
}

export const approvalsDecide = defineDecision(
  'approvals.decide',
  'Reading, listing, approving or denying an approval of one call: its grant’s connection owner or an owner or admin of the target pod, never the call’s own principal.',
  z.strictObject({
    action: z
      .enum(['read', 'list', 'approve', 'deny', 'read_args'])
      .describe('`read_args`: whether the caller reads the arguments of the call (its deciders do)'),
    now_ms: Millis,
    caller: z.strictObject({ kind: z.literal('human'), id: z.string() }),
    caller_role: z.string().optional().describe("the caller's role in the grant's target pod; absent: not a member"),
    approval: z.strictObject({
      principal: CallPrincipalFact,
      state: z.enum(['pending', 'approved', 'denied', 'used']),
      expires_at_ms: Millis,
    }),
    grant: GrantFacts.describe('the approval’s grant: its chain (for its status), members and connection'),
  }),
  verdict({}),
);
