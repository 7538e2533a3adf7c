import { ToolName } from '../kernel/schema';
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
    oauthClient: z
      .object({ clientId: z.string(), name: z.string() })
      .nullable()
      .openapi({ description: 'The MCP host (OAuth client) this child grant was consented for; `null` for any other grant' }),
  })
  .openapi('Grant');

export const GrantParams = z.strictObject({ grantId: idParam('grt_01jd0000000000000000000000') });
export const PodParams = z.strictObject({ podId: idParam('pod_01jd0000000000000000000000') });

export const ListGrantsQuery = z.strictObject({ status: GrantStatus.optional(), limit: listLimit(), cursor });
