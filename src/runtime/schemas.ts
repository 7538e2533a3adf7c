import { idParam, listLimit, page, timestamp, z } from '../kernel/schema';
import { GrantSchema } from '../grants/schemas';
import { MemberSchema, PodSchema } from '../pods/schemas';
import { AgentSchema, RuntimeSchema } from '../registry/schemas';

export const MAX_WAIT_MS = 20_000;

export const InstallationSchema = z
  .object({ podId: z.string(), name: z.string(), agentId: z.string(), installedAt: timestamp, runtime: RuntimeSchema })
  .openapi('Installation', { description: 'A runtime token authenticates one seat, so this list has one item.' });

export const RuntimePodSchema = z.object({ id: z.string(), name: z.string() }).openapi('RuntimePod');

export const PodContextSchema = z
  .object({
    pod: PodSchema,
    agent: AgentSchema,
    members: z.array(MemberSchema),
    grants: z.array(GrantSchema),
  })
  .openapi('PodContext', {
    description:
      'The pod, the calling agent, every current member, and the grants this agent can use now: active grants whose effective audience contains it.',
  });

export const EventSchema = z
  .object({
    id: z.string().openapi({ example: 'evt_01jd0000000000000000000000' }),
    type: z.enum([
      'grant.created',
      'grant.attenuated',
      'grant.revoked',
      'pod.member_added',
      'pod.member_removed',
      'agent.updated',
      'runtime.start_requested',
      'runtime.stop_requested',
      'approval.requested',
      'approval.decided',
    ]),
    podId: z.string(),
    occurredAt: timestamp,
    deliveryCount: z.number().int().min(1).openapi({ description: '1 on first delivery; +1 each time an unacked event is leased again' }),
    data: z.record(z.string(), z.unknown()),
  })
  .openapi('Event');

export const EventsQuery = z.strictObject({
  limit: listLimit(100, 10),
  waitMs: z.coerce
    .number()
    .int()
    .min(0)
    .max(MAX_WAIT_MS)
    .default(0)
    .openapi({
      type: 'integer',
      minimum: 0,
      maximum: MAX_WAIT_MS,
      default: 0,
      description: `Long poll: wait up to this many ms (0..${MAX_WAIT_MS}) for an event when none is pending`,
    }),
});

export const RuntimePodParams = z.strictObject({ podId: idParam('pod_01jd0000000000000000000000') });
export const EventParams = z.strictObject({ eventId: idParam('evt_01jd0000000000000000000000') });

export const InstallationsPage = page(InstallationSchema);
export const RuntimePodsPage = page(RuntimePodSchema);
export const EventsPage = page(EventSchema);
