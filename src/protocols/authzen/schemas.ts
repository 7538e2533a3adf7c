import { CheckResult } from '../../broker/schemas';
import { z } from '../../kernel/schema';

/**
 * The wire shapes of OpenID AuthZEN 1.0 (the Authorization API): its information model as the
 * specification writes it, unknown members ignored (the specification asks receivers to), and
 * what this service reads of it. Only what AuthZEN itself requires is a 400; a well-formed
 * evaluation outside our profile (another subject or resource type, no token) is answered
 * `decision: false`, evaluation by evaluation.
 */

/** Most evaluations one batch may carry: each is a whole broker check, with its record. */
export const MAX_EVALUATIONS = 64;

const Properties = z.record(z.string(), z.unknown());
const Name = z.string().min(1).max(1024);

export const Subject = z
  .object({
    type: Name.openapi({ example: 'agent', description: '`agent` (or `user` for a human’s forwarded JWT)' }),
    id: Name.openapi({ description: 'The agent’s id; refused when the token is anyone else’s' }),
    properties: Properties.optional().openapi({
      description: '`token`: the agent’s own credential (runtime token or access token), forwarded as it was received',
    }),
  })
  .openapi('AuthzenSubject');

export const Resource = z
  .object({
    type: Name.openapi({ example: 'grant' }),
    id: Name.openapi({ example: 'grt_01jd6x3c4vf8r9t2y5u7w0z1ab', description: 'The grant the call is made through' }),
    properties: Properties.optional().openapi({
      description: '`args`: the tool’s arguments (an object; only their digest is kept, never stored, logged or returned)',
    }),
  })
  .openapi('AuthzenResource');

export const Action = z
  .object({
    name: Name.openapi({ example: 'repos.read_file', description: 'The tool' }),
    properties: Properties.optional(),
  })
  .openapi('AuthzenAction');

const Context = Properties.openapi('AuthzenRequestContext', {
  description:
    'The environment. Read: `credential: true` asks, as on the broker check, for a credential minted for this call alone on allow; ' +
    '`approvalId`, a re-sent call’s approval. Anything else is ignored.',
});

export const EvaluationRequest = z
  .object({ subject: Subject, action: Action, resource: Resource, context: Context.optional() })
  .openapi('AuthzenEvaluationRequest');

export const SEMANTICS = ['execute_all', 'deny_on_first_deny', 'permit_on_first_permit'] as const;
export type Semantic = (typeof SEMANTICS)[number];

export const EvaluationsRequest = z
  .object({
    subject: Subject.optional(),
    action: Action.optional(),
    resource: Resource.optional(),
    context: Context.optional(),
    evaluations: z
      .array(
        z.object({
          subject: Subject.optional(),
          action: Action.optional(),
          resource: Resource.optional(),
          context: Context.optional(),
        }),
      )
      .max(MAX_EVALUATIONS)
      .optional()
      .openapi({ description: `At most ${MAX_EVALUATIONS}; each member overrides the top-level defaults key by key` }),
    options: z
      .object({
        evaluations_semantic: z
          .enum(SEMANTICS)
          .optional()
          .openapi({
            description:
              '`execute_all` (the default), `deny_on_first_deny` or `permit_on_first_permit`: the evaluations after the one that ' +
              'short-circuits are neither checked nor answered (no record, no budget)',
          }),
      })
      .optional(),
  })
  .openapi('AuthzenEvaluationsRequest');

export const DecisionContext = z
  .object({
    reason: z.string().openapi({ description: '`allowed`, a deny reason of the broker check, or a refusal of the request' }),
    callId: z
      .string()
      .optional()
      .openapi({ description: 'The call record: report its outcome with POST /api/broker/calls/{callId}/outcome' }),
    explanation: CheckResult.shape.explanation,
    approvalId: z.string().optional(),
    retryAfterMs: z.number().int().optional(),
    message: z.string().optional(),
    credential: CheckResult.shape.credential,
    error: z
      .object({ status: z.number().int(), message: z.string() })
      .optional()
      .openapi({ description: 'A refusal of this evaluation itself (unknown grant, bad subject, malformed member): no call was checked' }),
  })
  .openapi('AuthzenDecisionContext');

export const Decision = z
  .object({ decision: z.boolean(), context: DecisionContext.optional() })
  .openapi('AuthzenDecision', { description: 'true only when the broker check allowed the call' });

export const EvaluationsResponse = z.union([z.object({ evaluations: z.array(Decision) }), Decision]).openapi('AuthzenEvaluationsResponse', {
  description: 'With `evaluations`, one decision per evaluation in order, up to the one that short-circuits; without, one decision',
});

export const PdpMetadata = z
  .object({
    policy_decision_point: z.string(),
    access_evaluation_endpoint: z.string(),
    access_evaluations_endpoint: z.string(),
  })
  .openapi('AuthzenPdpMetadata');

export type EvaluationRequest = z.infer<typeof EvaluationRequest>;
export type EvaluationsRequest = z.infer<typeof EvaluationsRequest>;
export type Decision = z.infer<typeof Decision>;
