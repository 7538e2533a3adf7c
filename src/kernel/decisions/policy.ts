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
