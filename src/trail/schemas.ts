import { cursor, idParam, listLimit, timestamp, z } from '../kernel/schema';

/** The trail's API: a grant's call records and budget use, and a call's outcome. */

/** `sha256:` and the first 16 hex digits of a minted token's SHA-256. */
export const CredentialFingerprint = z
  .string()
  .regex(/^sha256:[0-9a-f]{16}$/, 'sha256: and 16 lowercase hex digits')
  .openapi({ example: 'sha256:9f86d081884c7d65' });

export const CallRecordSchema = z
  .object({
    id: z.string(),
    grantId: z.string(),
    rootId: z.string().openapi({ description: "The grant's root grant (the grant itself for a root): a member of the record's leaf" }),
    tool: z.string(),
    decision: z.enum(['allow', 'deny', 'approval_required']).openapi({
      description:
        "What the check answered, as the record's leaf in the trail's Merkle tree holds it. The leaf's `reason` is the record's, " +
        'except for a call held for approval, whose leaf keeps `approval_required` whatever became of the approval',
    }),
    outcome: z.enum(['pending', 'denied', 'succeeded', 'failed', 'awaiting_approval', 'approved']).openapi({
      description:
        'An allowed call: `pending` until its outcome is reported, then `succeeded` or `failed`. A call held for approval: ' +
        '`awaiting_approval` while the approval is pending, then `approved` (the call itself is the re-sent check, a record ' +
        'of its own) or `denied` (`reason` `approval_denied`, or `approval_expired` when nobody decided in time). Any other refusal: `denied`.',
    }),
    reason: z.string(),
    approvalId: z.string().nullable().openapi({
      description: 'The approval (`apr_…`) that allowed the call or the one it waits for; null when no approval concerns the call',
    }),
    decisionId: z.string().nullable().openapi({
      description:
        'The policy decision behind the answer: the `decision_id` of its decision log event. Null only on records written before the service kept it apart',
      example: '0b6f6a8e-3c1d-4f2a-9e57-2d1f6c0a4b8e',
    }),
    approvedBy: z
      .string()
      .nullable()
      .openapi({ description: 'Who decided the approval the record names: the call it allowed, and the call it held' }),
    principal: z.object({ kind: z.enum(['user', 'agent']), id: z.string() }),
    requestedAt: timestamp,
    completedAt: timestamp.nullable(),
    durationMs: z.number().int().nullable(),
    argsDigest: z.string().openapi({ example: 'sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08' }),
    credential: z
      .object({
        fingerprint: CredentialFingerprint,
        expiresAt: timestamp,
      })
      .nullable()
      .openapi({ description: 'The token minted for the call (`credential: true`): its fingerprint and expiry, never the token' }),
    leafIndex: z.number().int().nullable().openapi({
      description: "The record's leaf in the trail's Merkle tree (`GET /api/trail/proofs/inclusion`); null on records older than the tree",
    }),
    outcomeLeafIndex: z.number().int().nullable().openapi({ description: "The leaf of the call's reported outcome; null until reported" }),
  })
  .openapi('CallRecord', { description: 'The arguments themselves are never stored or returned; only their digest.' });

export const GrantUsageSchema = z
  .object({
    grantId: z.string(),
    calls: z.number().int().openapi({ description: 'The budget: calls per window' }),
    windowMs: z.number().int(),
    since: timestamp.openapi({ description: 'Where the window starts now' }),
    used: z.number().int().openapi({ description: 'Allowed calls since `since` through the grant or any grant below it' }),
    remaining: z.number().int(),
    descendants: z.number().int().openapi({ description: 'Grants below this one, whatever their state' }),
    liveDescendants: z.number().int().openapi({ description: 'Grants below this one that a revocation of it would revoke now' }),
  })
  .openapi('GrantUsage', {
    description:
      "A grant's budget use now, counted from the call trail as the service rebuilds its windows (a budget over 1,000 calls is " +
      'kept in buckets, so the service may admit by up to one bucket more or less), and the size of its subtree.',
  });
export const GrantParams = z.strictObject({ grantId: idParam('grt_01jd0000000000000000000000') });

export const ListCallsQuery = z.strictObject({
  limit: listLimit(),
  cursor,
  credential: CredentialFingerprint.optional().openapi({ description: 'Only the calls that received the token of this fingerprint' }),
  outcome: z
    .enum(['pending', 'denied', 'succeeded', 'failed', 'awaiting_approval'])
    .optional()
    .openapi({
      description:
        'Only calls with this outcome as recorded at the check: a held call is found under `awaiting_approval` even once its ' +
        'approval has ended, while the listing shows it as it ended (`approved`, or `denied` with `approval_denied`)',
    }),
  reason: z
    .string()
    .regex(/^[a-z][a-z0-9_]{0,63}$/, 'a reason: snake_case, at most 64 characters')
    .optional()
    .openapi({ description: "Only calls with this reason (`allowed`, `approval_required`, a deny reason, an org rule's own)" }),
  tool: z.string().min(1).max(200).optional().openapi({ description: 'Only calls of this tool' }),
  principal: z.string().min(1).max(255).optional().openapi({ description: 'Only calls made by this principal (a user id or an agent id)' }),
  from: z.iso.datetime({ offset: true }).optional().openapi({ description: 'Only calls checked at or after this time' }),
  to: z.iso.datetime({ offset: true }).optional().openapi({ description: 'Only calls checked before this time' }),
});

export const CallParams = z.strictObject({ callId: idParam('call_01jd6x3c4vf8r9t2y5u7w0z1ab') });

export const OutcomeBody = z.strictObject({
  outcome: z.enum(['succeeded', 'failed']),
  durationMs: z.number().int().min(0).max(86_400_000).optional(),
  errorCode: z
    .string()
    .regex(/^[A-Za-z0-9_.:-]{1,100}$/, 'letters, digits and _ . : -, at most 100')
    .optional(),
});

export const OutcomeAnswer = CallRecordSchema.extend({
  receipt: z.object({ leafIndex: z.number().int() }).optional().openapi({
    description: "The outcome's own leaf in the trail's Merkle tree (the record's is `leafIndex`); absent with TRAIL_TREE=off",
  }),
}).openapi('CompletedCallRecord');

/** At most this many outcomes in one batch: one request stays small and quick to make durable. */
export const MAX_OUTCOMES_PER_BATCH = 100;

export const OutcomeBatchBody = z
  .strictObject({
    outcomes: z
      .array(z.strictObject({ callId: idParam('call_01jd6x3c4vf8r9t2y5u7w0z1ab'), ...OutcomeBody.shape }))
      .min(1)
      .max(MAX_OUTCOMES_PER_BATCH),
  })
  .openapi('OutcomeBatch');

export const OutcomeBatchResult = z
  .object({
    results: z.array(
      z.object({
        callId: z.string(),
        status: z.enum(['recorded', 'outcome_already_recorded', 'call_denied', 'outcome_too_late', 'not_found']).openapi({
          description:
            '`recorded`: durable now. `outcome_already_recorded`: an earlier report (a retried batch) holds it. The others, as the single report would answer them: never taken.',
        }),
      }),
    ),
  })
  .openapi('OutcomeBatchResult');
