import { z } from 'zod';
import { defineDecision, verdict } from './define';
import { ChainLink, ConnectionFact, Millis } from './facts';
import { Explanation, SessionLabel } from './explanation';
import { OrgOutput } from './org';

const ResourcePointers = z.strictObject({
  repository: z.string().optional(),
  ref: z.string().optional(),
  path: z.string().optional(),
});

export const CallPrincipalFact = z.strictObject({ kind: z.enum(['user', 'agent']), id: z.string() });

/**
 * What the grant's tree remembers across its checks, on every replica: the labels enforced org
 * rules put on its allowed calls, and its allowed calls per tool. As of the tree's last charge:
 * the budget script returns it with every answer, and refuses a charge decided on another set of
 * labels than the tree holds.
 */
export const SessionFact = z
  .strictObject({
    labels: z
      .record(SessionLabel, Millis)
      .describe('by label: when an allowed call of the tree first carried it (Redis time); gone SESSION_LABEL_TTL_MS later'),
    calls: z
      .record(z.string(), z.number().int().min(0))
      .describe("by tool: the tree's allowed calls within the root grant's budget window (counted up to 1,000 a tool)"),
  })
  .describe("the grant tree's session: what its earlier allowed calls left");

export const brokerCheck = defineDecision(
  'broker.check',
  'One tool call through a grant, before the budget is consulted.',
  z.strictObject({
    now_ms: Millis,
    broker_id: z.string().describe('the broker asking'),
    tool: z
      .strictObject({
        name: z.string(),
        access: z.enum(['read', 'write']).optional().describe('absent: the connection does not enable the tool'),
        resource: ResourcePointers.optional().describe("where the tool's repository, ref and path sit in `args`"),
      })
      .describe('the tool called, as its connection declares it'),
    args: z.record(z.string(), z.unknown()).describe("the call's arguments: evaluated in memory, never stored or logged"),
    args_digest: z.string().describe('sha256:<hex> of the RFC 8785 canonical JSON of `args`, as the call record keeps it'),
    approval: z
      .strictObject({
        id: z.string(),
        found: z.boolean().describe('false: no approval of that id on this grant'),
        grant_id: z.string().optional(),
        tool: z.string().optional(),
        principal: CallPrincipalFact.optional(),
        args_digest: z.string().optional(),
        state: z.enum(['pending', 'approved', 'denied', 'used']).optional(),
        expires_at_ms: Millis.optional(),
      })
      .optional()
      .describe('the approval a re-sent check brings'),
    resource: z
      .strictObject({ repository: z.string().optional(), ref: z.string().optional(), path: z.string().optional() })
      .describe("the strings the tool's pointers found in `args`; a pointer that found none leaves its key out"),
    local_time: z
      .strictObject({
        time_zone: z.string().describe('POLICY_TIME_ZONE, an IANA zone'),
        weekday: z.number().int().min(1).max(7).describe('ISO 8601: 1 is Monday, 7 is Sunday'),
        hour: z.number().int().min(0).max(23),
        minute: z.number().int().min(0).max(59),
      })
      .describe('now_ms in the configured time zone: the WASM target has no clock or zone database'),
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
    session: SessionFact,
  }),
  verdict({
    reason: z.string().describe('the one reason the broker reports: `allowed`, or the first deny reason by precedence'),
    org: OrgOutput,
    consumes_approval: z.boolean().optional().describe('the call is allowed by the approval it brings, which is used up by it'),
    labels: z.array(SessionLabel).optional().describe("an allowed call's labels from enforced org rules: kept on the grant's tree"),
    shadow_labels: z.array(SessionLabel).optional().describe('the labels of org packages in shadow mode: logged, never kept'),
    exact_calls: z
      .boolean()
      .optional()
      .describe('an enforced org rule reads the count of the tool called: charge only on the count the decision saw'),
    explanation: Explanation.optional().describe('a refusal: why, at which level, and what would change it'),
  }),
);

export const brokerCharge = defineDecision(
  'broker.charge',
  'A call the policy allowed and the budget script then refused (a full window, an approval used first, the labels cap): explained by the policy all the same.',
  z.strictObject({
    reason: z.enum(['budget_exhausted', 'approval_used', 'session_label_limit']),
    chain: z.array(z.strictObject({ id: z.string() })).describe('the grant first, its root last'),
    full_levels: z.array(z.number().int().min(0)).describe('budget_exhausted: the indices in `chain` of the levels whose window is full'),
  }),
  verdict({ explanation: Explanation }),
);

export const brokerOutcome = defineDecision(
  'broker.outcome',
  "Completing a call record: once, by the grant's own broker, for an allowed call only.",
  z.strictObject({
    broker_id: z.string(),
    grant: z.strictObject({ broker_id: z.string() }).optional(),
    call: z
      .strictObject({
        outcome: z.string(),
        age_ms: z.number().int().describe("milliseconds from the call's check to this report, on the service's clock"),
      })
      .optional(),
  }),
  verdict({}),
);
