import { ToolName } from '../connections/schemas';
import { ResourcesSchema } from './resource-patterns';
import { ApiError } from '../kernel/errors';
import { cursor, idParam, listLimit, timestamp, z } from '../kernel/schema';

const DAY_MS = 86_400_000;

/** Fields the server derives from the connection: sending one is its own 400. */
const SERVER_DERIVED = ['installationId', 'brokerId'] as const;

/**
 * Refuses a server-derived field before any other validation, so a client that sends one learns
 * exactly that (`server_derived_field`) rather than a generic unknown-field 400.
 */
function refusingServerDerived<T extends z.ZodType>(schema: T) {
  return z.preprocess((body) => {
    if (typeof body === 'object' && body !== null) {
      const sent = SERVER_DERIVED.filter((field) => Object.hasOwn(body, field));
      if (sent.length > 0) {
        throw new ApiError(
          'server_derived_field',
          `${sent.join(' and ')} ${sent.length > 1 ? 'are' : 'is'} derived by the server from the connection`,
          {
            errors: sent.map((field) => ({ path: `body.${field}`, message: 'server-derived; do not send it' })),
          },
        );
      }
    }
    return body;
  }, schema);
}

const unique = (values: readonly string[]) => new Set(values).size === values.length;

const MemberId = z.string().min(1).max(255);

export const TargetSchema = z
  .strictObject({
    kind: z.string().min(1).max(32).openapi({ description: '`pod` or `seat`; any other kind is refused with 422 `target_not_allowed`' }),
    id: z.string().min(1).max(255).openapi({ description: 'A pod id for kind `pod`, an agent user id (`agt_…`) for kind `seat`' }),
  })
  .openapi('GrantTarget');

const Tools = z.array(ToolName).min(1).max(200).refine(unique, 'tool names must be unique');

const Audience = z
  .array(MemberId)
  .min(1)
  .max(1000)
  .refine(unique, 'audience ids must be unique')
  .openapi({ description: 'A smaller audience: current members of the pod (for a seat grant, only the seat)' });

const BudgetInput = z
  .strictObject({
    calls: z.number().int().min(1).max(1_000_000_000).optional().openapi({ description: 'Default 1000' }),
    windowMs: z
      .number()
      .int()
      .min(1)
      .max(365 * DAY_MS)
      .optional()
      .openapi({ description: 'Default 3600000 (one hour)' }),
  })
  .openapi('GrantBudgetInput');

const Limits = {
  audience: Audience.optional(),
  writeMode: z.enum(['read', 'approve', 'write']).optional(),
  budget: BudgetInput.optional(),
  expiresAt: z.iso.datetime({ offset: false }).optional(),
  resources: ResourcesSchema.optional(),
};

export const CreateGrantBody = refusingServerDerived(
  z.strictObject({ connectionId: z.string().min(1).max(64), target: TargetSchema, tools: Tools, ...Limits }).openapi('CreateGrant', {
    description:
      'Defaults: writeMode `read`, budget `{calls: 1000, windowMs: 3600000}`, expiresAt now + 30 days (at most 365 days). ' +
      '`installationId` and `brokerId` are derived from the connection; sending either is a 400 `server_derived_field`.',
  }),
);

export const AttenuateGrantBody = refusingServerDerived(
  z.strictObject({ target: TargetSchema.optional(), tools: Tools.optional(), ...Limits }).openapi('AttenuateGrant', {
    description:
      'Every omitted field inherits the parent (`resources` dimension by dimension). tools ⊆, audience ⊆, writeMode ≤, calls ≤, ' +
      "windowMs ≥, expiresAt ≤, every resource pattern covered by one of the parent's; " +
      'a pod target may narrow to a seat of that pod in the parent audience.',
  }),
);

export type CreateGrantInput = z.infer<typeof CreateGrantBody>;
export type AttenuateGrantInput = z.infer<typeof AttenuateGrantBody>;

export const GrantStatus = z.enum(['active', 'expired', 'revoked']);

export const GrantSchema = z
  .object({
    id: z.string(),
    parentId: z.string().nullable(),
    rootId: z.string(),
    depth: z.number().int(),
    target: z.object({ kind: z.enum(['pod', 'seat']), id: z.string() }),
    audience: z.array(z.string()).openapi({ description: 'Effective audience, computed at read time' }),
    audienceMode: z.enum(['members', 'listed']),
    tools: z.array(z.string()),
    writeMode: z.enum(['read', 'approve', 'write']),
    budget: z.object({ calls: z.number().int(), windowMs: z.number().int() }),
    resources: ResourcesSchema.nullable().openapi({ description: '`null`: unrestricted' }),
    expiresAt: timestamp,
    createdAt: timestamp,
    revokedAt: timestamp.nullable(),
    status: GrantStatus.openapi({ description: 'Computed at read time, also from ancestors' }),
    installationId: z.string(),
    grantedBy: z.string(),
  })
  .openapi('Grant');

/** `sha256:` and the first 16 hex digits of a minted token's SHA-256. */
export const CredentialFingerprint = z
  .string()
  .regex(/^sha256:[0-9a-f]{16}$/, 'sha256: and 16 lowercase hex digits')
  .openapi({ example: 'sha256:9f86d081884c7d65' });

export const CallRecordSchema = z
  .object({
    id: z.string(),
    grantId: z.string(),
    tool: z.string(),
    outcome: z.enum(['pending', 'denied', 'succeeded', 'failed', 'awaiting_approval', 'approved']).openapi({
      description:
        'An allowed call: `pending` until its outcome is reported, then `succeeded` or `failed`. A call held for approval: ' +
        '`awaiting_approval` while the approval is pending, then `approved` (the call itself is the re-sent check, a record ' +
        'of its own) or `denied` (`reason` `approval_denied`, or `approval_expired` when nobody decided in time). Any other refusal: `denied`.',
    }),
    reason: z.string(),
    approvalId: z.string().nullable().openapi({
      description: 'The approval (`apr_…`) that allowed the call, the one it waits for, or the policy decision id that allowed it',
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
  })
  .openapi('CallRecord', { description: 'The arguments themselves are never stored or returned; only their digest.' });

export const GrantParams = z.strictObject({ grantId: idParam('grt_01jd0000000000000000000000') });
export const PodParams = z.strictObject({ podId: idParam('pod_01jd0000000000000000000000') });

export const ListGrantsQuery = z.strictObject({ status: GrantStatus.optional(), limit: listLimit(), cursor });
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
export const ListCallsQuery = z.strictObject({
  limit: listLimit(),
  cursor,
  credential: CredentialFingerprint.optional().openapi({ description: 'Only the calls that received the token of this fingerprint' }),
});
