import { z } from 'zod';
import { defineDecision, verdict } from './define';
import { Caller, ConnectionFact, GrantFact, GrantFacts, Millis, ResourcesFact } from './facts';
import { OrgOutput } from './org';

/** `<dimension>: <pattern>` for each pattern that could only match non-canonical values. */
const UnmatchablePatterns = z.array(z.string()).optional();

const Status = z.enum(['active', 'expired', 'revoked']);

export const grantsCreate = defineDecision(
  'grants.create',
  'Creating a root grant.',
  z.strictObject({
    now_ms: Millis,
    caller: Caller,
    connection: ConnectionFact.optional(),
    target: z.strictObject({ kind: z.string(), id: z.string() }).describe('as requested; an unknown kind is refused'),
    pod: z
      .strictObject({ id: z.string(), members: z.array(z.string()) })
      .optional()
      .describe("the target pod (a seat's own pod)"),
    seat: z.strictObject({ id: z.string(), pod_id: z.string() }).optional().describe('the installed agent a seat target names'),
    request: z.strictObject({
      tools: z.array(z.string()),
      write_mode: z.enum(['read', 'approve', 'write']),
      audience: z.array(z.string()).optional(),
      expires_at_ms: Millis,
      resources: ResourcesFact.optional(),
    }),
  }),
  verdict({ org: OrgOutput, unmatchable_patterns: UnmatchablePatterns }),
);

export const grantsRead = defineDecision(
  'grants.read',
  'Reading a grant or its call trail; an allowed read also carries status and effective audience.',
  z.strictObject({ now_ms: Millis, caller: Caller, grant: GrantFacts.optional() }),
  verdict({ status: Status.optional(), audience: z.array(z.string()).optional() }),
);

export const grantsList = defineDecision(
  'grants.list',
  "Listing a pod's grants: members of the pod only.",
  z.strictObject({ caller: Caller, pod: z.strictObject({ members: z.array(z.string()) }).optional() }),
  verdict({}),
);

export const grantsRevoke = defineDecision(
  'grants.revoke',
  'Revoking a grant: the owner of its connection.',
  z.strictObject({ caller: Caller, grant: GrantFacts.optional() }),
  verdict({}),
);

/** The child as requested, every omitted field inherited: its target may name an unknown kind. */
const ChildFact = GrantFact.extend({
  target: z.strictObject({ kind: z.string(), id: z.string(), pod_id: z.string() }),
});

export const grantsAttenuate = defineDecision(
  'grants.attenuate',
  'An installed agent narrows a usable grant into a child.',
  z.strictObject({
    now_ms: Millis,
    max_depth: z.number().int(),
    max_live_children: z.number().int(),
    live_children: z.number().int().describe('children of the parent neither revoked nor expired'),
    caller: z.strictObject({ kind: z.literal('agent'), id: z.string(), pod_id: z.string(), desired_state: z.enum(['running', 'stopped']) }),
    grant: GrantFacts.optional(),
    child: ChildFact.optional(),
  }),
  verdict({
    widened: z.array(z.string()).optional(),
    unmatchable_patterns: UnmatchablePatterns,
    child_status: Status.optional(),
    child_audience: z.array(z.string()).optional(),
    org: OrgOutput,
  }),
);
