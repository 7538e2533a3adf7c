import { cursor, idParam, listLimit, timestamp, z } from '../kernel/schema';

export const ApprovalSchema = z
  .object({
    id: z.string(),
    grantId: z.string(),
    callId: z.string(),
    tool: z.string(),
    argsDigest: z.string(),
    principal: z.object({ kind: z.enum(['user', 'agent']), id: z.string() }),
    state: z.enum(['pending', 'approved', 'denied', 'expired', 'used']),
    requestedAt: timestamp,
    expiresAt: timestamp,
    decidedBy: z.string().nullable(),
    decidedAt: timestamp.nullable(),
    note: z.string().nullable(),
    args: z
      .union([z.record(z.string(), z.unknown()), z.literal('**REDACTED**')])
      .nullable()
      .optional()
      .openapi({
        description:
          "The call's arguments as kept for its deciders (present only for them): the org's mask rules applied (a masked value reads " +
          '`**REDACTED**`); null once the approval has left `pending`, when too large to keep, or when unreadable.',
      }),
    argsTooLarge: z
      .boolean()
      .optional()
      .openapi({ description: 'The arguments were over 64 KiB of canonical JSON and were not kept (deciders only).' }),
    argsUnreadable: z.boolean().optional().openapi({
      description: 'The arguments were kept but no configured key opens them (rotated away): `args` is null (deciders only).',
    }),
  })
  .openapi('Approval', {
    description:
      'A human approval of one call: its grant, tool, principal and argument digest. Allows that call once, when re-sent ' +
      "with `approvalId`, before `expiresAt` (APPROVAL_TTL_MS after the request, or the grant's expiry if sooner) and while the grant is usable.",
  });

export const ApprovalParams = z.strictObject({ approvalId: idParam('apr_01jd6x3c4vf8r9t2y5u7w0z1ab') });

export const ListApprovalsQuery = z.strictObject({
  state: z.enum(['pending', 'approved', 'denied', 'expired', 'used']).optional(),
  limit: listLimit(),
  cursor,
  requestedAfter: z.iso
    .datetime({ offset: true })
    .optional()
    .openapi({ description: 'Only approvals requested after this instant (the `requestedAt` of the newest one the client holds)' }),
  waitMs: z.coerce.number().int().min(0).max(25_000).default(0).openapi({
    description:
      'Long poll: while the answer would hold no approval, wait up to this long (0 to 25000) for one to be requested, on any replica',
  }),
});

export const DecideBody = z.strictObject({ note: z.string().min(1).max(2000).optional() }).openapi('ApprovalDecision');

export const WaitQuery = z.strictObject({
  waitMs: z.coerce.number().int().min(0).max(20_000).default(0).openapi({ description: 'Long-poll while pending, up to 20000' }),
});
