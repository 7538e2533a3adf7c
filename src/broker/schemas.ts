import { ToolName } from '../connections/schemas';
import { Explanation } from '../kernel/decisions/explanation';
import { idParam, z } from '../kernel/schema';

export const CheckBody = z
  .strictObject({
    grantId: idParam('grt_01jd6x3c4vf8r9t2y5u7w0z1ab'),
    tool: ToolName,
    subjectToken: z.string().min(1).max(8192).optional().openapi({
      description: "The caller's own bearer credential (human JWT or `art_` runtime token), forwarded and verified here",
    }),
    principal: z
      .strictObject({ kind: z.enum(['user', 'agent']), id: z.string().min(1).max(255) })
      .optional()
      .openapi({ description: 'A broker-asserted principal: refused (403) unless the deployment trusts its brokers' }),
    approvalId: idParam('apr_01jd6x3c4vf8r9t2y5u7w0z1ab')
      .optional()
      .openapi({ description: 'A re-sent check: the approval of this very call (same grant, tool, principal and args)' }),
    args: z.record(z.string(), z.unknown()).openapi({
      description: 'The tool arguments: only their RFC 8785 digest is kept; never stored, logged or returned',
    }),
  })
  .refine((body) => (body.subjectToken === undefined) !== (body.principal === undefined), {
    message: 'send exactly one of subjectToken and principal',
    path: ['subjectToken'],
  });

export const CheckResult = z
  .object({
    decision: z.enum(['allow', 'deny', 'approval_required']),
    callId: z.string(),
    reason: z.string().openapi({
      description: "`allowed`, or a core deny reason, or an org rule's own reason",
    }),
    approvalId: z.string().optional().openapi({ description: 'With approval_required: the approval a human now decides' }),
    approval: z.object({ id: z.string(), expiresAt: z.string() }).optional(),
    message: z.string().optional().openapi({ description: "With an org rule's reason: the rule's message" }),
    retryAfterMs: z.number().int().optional().openapi({ description: 'With budget_exhausted: when the first unit frees' }),
    explanation: z
      .strictObject(Explanation.shape)
      .openapi('DenialExplanation', {
        description:
          'With every deny and approval_required: the Rego rule that refused, the level of the chain (0 is the root; the one nearest the root when several refuse), and what would change the answer. The decision event of the check holds the same object.',
      })
      .optional(),
    budget: z.object({
      remaining: z.number().int().openapi({ description: 'Calls left now, the least over the whole chain' }),
      resetMs: z.number().int().openapi({ description: 'When the oldest counted call of that level leaves the window' }),
    }),
  })
  .openapi('BrokerCheckResult');

export const CallParams = z.strictObject({ callId: idParam('call_01jd6x3c4vf8r9t2y5u7w0z1ab') });

export const OutcomeBody = z.strictObject({
  outcome: z.enum(['succeeded', 'failed']),
  durationMs: z.number().int().min(0).max(86_400_000).optional(),
  errorCode: z
    .string()
    .regex(/^[A-Za-z0-9_.:-]{1,100}$/, 'letters, digits and _ . : -, at most 100')
    .optional(),
});
