import { ToolName } from '../kernel/schema';
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
      .openapi({
        description:
          'A re-sent check: the approval of this very call (same grant, tool, principal and args). Optional: a check that needs ' +
          'an approval and brings none is decided with the open (pending or approved, unexpired) approval of the identical ' +
          'call when there is one, so an agent that reconnects keeps its approval: approved, allowed once; pending, approval_pending',
      }),
    args: z.record(z.string(), z.unknown()).openapi({
      description: 'The tool arguments: only their RFC 8785 digest is kept; never stored, logged or returned',
    }),
    credential: z
      .boolean()
      .optional()
      .openapi({
        description:
          "On allow, also mint a GitHub App installation token for exactly the call's repository and the tool's permissions " +
          "(the connection's app). 422 `credential_unavailable` on a connection or tool that cannot have one; 503 when GitHub " +
          'refuses or does not answer in time (the call is then recorded as denied and takes no budget unit)',
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
    approval: z
      .object({
        id: z.string(),
        expiresAt: z.string(),
        consoleUrl: z.string().openapi({
          description: "The approval's page in the web console (`<PUBLIC_URL>/console/approvals/<id>`), where a person decides it",
        }),
      })
      .optional(),
    message: z.string().optional().openapi({ description: "With an org rule's reason: the rule's message" }),
    retryAfterMs: z.number().int().optional().openapi({ description: 'With budget_exhausted: when the first unit frees' }),
    explanation: z
      .strictObject(Explanation.shape)
      .openapi('DenialExplanation', {
        description:
          'With every deny and approval_required: the Rego rule that refused, the level of the chain (0 is the root; the one nearest the root when several refuse), and what would change the answer. The decision event of the check holds the same object.',
      })
      .optional(),
    receipt: z
      .object({ leafIndex: z.number().int().openapi({ description: "The call record's leaf in the trail's Merkle tree" }) })
      .optional()
      .openapi('TrailReceipt', {
        description:
          'With every recorded answer: where the call record is in the trail. Prove it against a signed checkpoint with ' +
          '`GET /api/trail/proofs/inclusion?callId=…` once a checkpoint covers it (within `TRAIL_CHECKPOINT_MS`).',
      }),
    budget: z.object({
      remaining: z.number().int().openapi({ description: 'Calls left now, the least over the whole chain' }),
      resetMs: z.number().int().openapi({ description: 'When the oldest counted call of that level leaves the window' }),
    }),
    credential: z
      .object({
        token: z
          .string()
          .openapi({ description: 'The installation access token: send it as `Authorization: Bearer` to GitHub for this call' }),
        expiresAt: z.string().openapi({ description: 'When GitHub expires it (more than 5 minutes from now)' }),
        repositories: z.array(z.string()).openapi({ description: 'The one repository (owner/name) it reaches' }),
        permissions: z.record(z.string(), z.string()).openapi({ description: "The installation permissions it carries (GitHub's names)" }),
      })
      .optional()
      .openapi('MintedCredential', {
        description:
          'With `credential: true` on allow: a token for this call alone. Never stored or logged; the call record keeps its fingerprint.',
      }),
    grantVersion: z.string().optional().openapi({
      description:
        "The version of the grant's tree this answer was decided under: opaque, and different after any change to the tree (a revocation, a member removed, a runtime stopped). A gateway keeps what it derived from the grant (its tool listing) while the versions its checks see stay the same.",
    }),
  })
  .openapi('BrokerCheckResult');
