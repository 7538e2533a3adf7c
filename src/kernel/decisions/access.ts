import { z } from 'zod';
import { defineDecision, verdict } from './define';

export const podsAccess = defineDecision(
  'pods.access',
  'Who may read a pod and manage its members and installed agents.',
  z.strictObject({
    action: z.string(),
    caller: z.strictObject({ kind: z.enum(['human', 'agent', 'broker']), role: z.enum(['owner', 'admin', 'member']).nullable() }),
    member: z
      .strictObject({ role: z.enum(['owner', 'admin', 'member']) })
      .optional()
      .describe('the member the action is about'),
    pod: z
      .strictObject({
        owner_count: z.number().int().nullable(),
        webhooks: z
          .strictObject({ count: z.number().int(), max: z.number().int() })
          .optional()
          .describe("the pod's webhooks and how many it may have (webhooks.create)"),
      })
      .optional(),
  }),
  verdict({}),
);

export const runtimeAccess = defineDecision(
  'runtime.access',
  'What an installed agent may reach with its runtime token.',
  z.strictObject({
    action: z.string(),
    caller: z.strictObject({ agent_id: z.string(), pod_id: z.string() }),
    pod: z.strictObject({ id: z.string() }).optional(),
    event: z.strictObject({ agent_id: z.string() }).optional(),
  }),
  verdict({}),
);

export const connectionsAccess = defineDecision(
  'connections.access',
  'A connection is visible to its owner and to no one else; an app installation is bound by the operator and connected by its bound owner alone.',
  z.strictObject({
    action: z.string(),
    caller: z.strictObject({ kind: z.enum(['human', 'agent', 'broker', 'operator']), id: z.string() }),
    connection: z.strictObject({ owner_id: z.string() }).optional(),
    app: z
      .strictObject({ name: z.string(), configured: z.boolean() })
      .optional()
      .describe('the GitHub App a new connection or a binding names'),
    binding: z.strictObject({ owner_id: z.string() }).optional().describe("the installation's current binding, when it has one"),
    owner_id: z.string().optional().describe('installation.bind: the user the operator binds the installation to'),
  }),
  verdict({}),
);
