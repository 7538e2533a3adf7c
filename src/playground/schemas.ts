import { Explanation } from '../kernel/decisions/explanation';
import { timestamp, z } from '../kernel/schema';

export const RecentQuery = z.strictObject({ limit: z.coerce.number().int().min(1).max(50).default(20) });

export const RecentCheck = z
  .object({
    decisionId: z.string(),
    at: timestamp,
    revision: z.string().openapi({ description: 'The policy revision that decided it' }),
    tool: z.string().nullable(),
    grantId: z.string().nullable(),
    allow: z.boolean(),
    reason: z.string().nullable(),
    input: z.record(z.string(), z.unknown()).openapi({ description: "The check's input as the decision log keeps it: `args` masked" }),
  })
  .openapi('RecentCheck');

const Outcome = z
  .object({
    revision: z.string(),
    allow: z.boolean(),
    reason: z.string().openapi({ description: '`allowed`, or the reason the check reports' }),
    reasons: z.array(z.string()),
    explanation: Explanation.optional(),
    orgDenials: z
      .array(z.object({ package: z.string(), reason: z.string(), message: z.string() }))
      .openapi({ description: 'Enforced org rules that refused' }),
    shadow: z
      .array(z.object({ package: z.string(), reason: z.string(), message: z.string(), effect: z.string() }))
      .openapi({ description: 'What org rules in shadow mode found (never enforced)' }),
  })
  .openapi('PlaygroundOutcome');

export const PlaygroundAnswer = z
  .object({
    serving: Outcome,
    candidate: Outcome.nullable().openapi({ description: 'The uploaded bundle, when one was sent' }),
    same: z.boolean().openapi({ description: 'Both gave the same decision and reason (true without a candidate)' }),
    argsMasked: z.boolean().openapi({ description: "The input's `args` was masked (as the decision log keeps it): rules read `{}` there" }),
  })
  .openapi('PlaygroundAnswer');
