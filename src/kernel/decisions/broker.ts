import { z } from 'zod';
import { defineDecision, verdict } from './define';
import { ChainLink, ConnectionFact, Millis } from './facts';

export const CallPrincipalFact = z.strictObject({ kind: z.enum(['user', 'agent']), id: z.string() });

export const brokerCheck = defineDecision(
  'broker.check',
  'One tool call through a grant, before the budget is consulted (CONTRACT §5).',
  z.strictObject({
    now_ms: Millis,
    broker_id: z.string().describe('the broker asking'),
    tool: z.string(),
    principal: CallPrincipalFact.optional().describe('who the call is for; absent when the forwarded subjectToken did not verify'),
    principal_source: z.enum(['subject_token', 'asserted']),
    trust_asserted_principal: z.boolean().describe('BROKER_TRUST_ASSERTED_PRINCIPAL'),
    chain: z.array(ChainLink).describe('the grant first, its root last'),
    connection: ConnectionFact,
    members: z
      .record(z.string(), z.array(z.string()))
      .describe("by pod id of the chain's targets: the principal's id when a current member"),
    runtime: z
      .strictObject({ desired_state: z.enum(['running', 'stopped']) })
      .optional()
      .describe('agent principals only'),
  }),
  verdict({ reason: z.string().describe('the one reason the broker reports: `allowed`, or the first deny reason by precedence') }),
);

export const brokerOutcome = defineDecision(
  'broker.outcome',
  "Completing a call record: once, by the grant's own broker, for an allowed call only.",
  z.strictObject({
    broker_id: z.string(),
    grant: z.strictObject({ broker_id: z.string() }).optional(),
    call: z.strictObject({ outcome: z.string() }).optional(),
  }),
  verdict({}),
);
