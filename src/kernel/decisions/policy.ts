import { z } from 'zod';
import { defineDecision, verdict } from './define';

const OrgMode = z.enum(['enforce', 'shadow', 'off']);

export const policyStatus = defineDecision(
  'policy.status',
  'Reading the status of the policy the service serves (revision, source, signature, the org packages and their modes, shadow disagreements): people signed in; agents and brokers learn nothing.',
  z.strictObject({
    caller: z.strictObject({ kind: z.enum(['human', 'agent', 'broker']), id: z.string() }),
  }),
  verdict({
    org_modes: z
      .record(z.string(), z.record(z.string(), OrgMode))
      .describe('The org packages the build listed, by decision and name, with their modes'),
  }),
);

export const policyPlayground = defineDecision(
  'policy.playground',
  "Trying a broker check against the serving policy and a candidate bundle (the console's policy playground): security admins only; anyone else learns nothing.",
  z.strictObject({
    caller: z.strictObject({
      kind: z.enum(['human', 'agent', 'broker']),
      id: z.string(),
      named_security_admin: z.boolean().describe('the operator names this person in SECURITY_ADMINS'),
      pod_admin: z.boolean().describe('this person is an owner or an admin of at least one pod'),
    }),
  }),
  verdict({}),
);
