import { idParam, listLimit, timestamp, z } from '../kernel/schema';

export const AgentName = z
  .string()
  .regex(/^[a-z][a-z0-9-]{0,62}$/, 'lowercase letters, digits and dashes, starting with a letter, at most 63')
  .openapi({ example: 'review-bot' });

export const RuntimeSchema = z
  .object({
    desiredState: z.enum(['running', 'stopped']).openapi({ description: 'What an owner or admin asked for' }),
    state: z.enum(['stopped', 'starting', 'running']).openapi({
      description: '`starting` after a start until the agent next polls events, then `running`; `stopped` at once on stop',
    }),
    changedAt: timestamp.nullable().openapi({ description: 'When `state` last changed' }),
    lastPolledAt: timestamp.nullable().openapi({ description: 'When the agent last polled events' }),
  })
  .openapi('Runtime', {
    description:
      'The runtime of an installed agent. A stopped runtime is a kill switch: the broker denies the seat (`runtime_stopped`) ' +
      'and attenuation answers 409, while the agent can still authenticate, poll and ack.',
  });

export const AgentSchema = z
  .object({
    podId: z.string(),
    name: AgentName,
    agentId: z.string(),
    displayName: z.string().nullable(),
    description: z.string().nullable(),
    installedAt: timestamp,
    installedBy: z.string(),
    runtime: RuntimeSchema,
  })
  .openapi('Agent');

export const InstallAgentBody = z
  .strictObject({
    name: AgentName,
    displayName: z.string().trim().min(1).max(200).optional(),
    description: z.string().trim().max(2000).optional(),
  })
  .openapi('InstallAgent');

export const UpdateAgentBody = z
  .strictObject({
    displayName: z.string().trim().min(1).max(200).nullable().optional(),
    description: z.string().trim().max(2000).nullable().optional(),
  })
  .openapi('UpdateAgent', {
    description: 'Only these two fields; `null` clears one, an omitted one stays. Sending the current values changes nothing.',
  });

export const RuntimeTokenSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    createdAt: timestamp,
    expiresAt: timestamp.nullable(),
    lastUsedAt: timestamp.nullable(),
  })
  .openapi('RuntimeToken', { description: 'A runtime token as listed: never the secret.' });

export const CreatedRuntimeTokenSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    token: z.string().openapi({ description: 'The secret `art_…`, shown this once.' }),
    createdAt: timestamp,
    expiresAt: timestamp.nullable(),
  })
  .openapi('CreatedRuntimeToken');

export const CreateRuntimeTokenBody = z
  .strictObject({
    name: z.string().trim().min(1).max(100),
    expiresAt: z.iso.datetime({ offset: false }).optional(),
  })
  .openapi('CreateRuntimeToken');

export const PodParams = z.strictObject({ podId: idParam('pod_01jd0000000000000000000000') });
export const AgentParams = PodParams.extend({ name: z.string().min(1).max(63) });
export const TokenParams = AgentParams.extend({ tokenId: idParam('rtk_01jd0000000000000000000000') });

export const ListAgentsQuery = z.strictObject({
  limit: listLimit(),
  cursor: AgentName.optional().openapi({ description: 'nextCursor of the previous page (the last name it listed)' }),
});
