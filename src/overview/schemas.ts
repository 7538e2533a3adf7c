import { idParam, timestamp, z } from '../kernel/schema';

export const OverviewParams = z.strictObject({ podId: idParam('pod_01jd0000000000000000000000') });

export const OverviewQuery = z.strictObject({
  range: z.enum(['24h', '7d']).default('24h').openapi({ description: 'The last 24 hours (24 bars) or the last 7 days (168 bars)' }),
});

const Counts = {
  allowed: z.number().int().openapi({ description: 'Checks allowed (whatever their outcome later)' }),
  denied: z.number().int(),
  awaitingApproval: z.number().int().openapi({ description: 'Checks that asked a human for approval' }),
};

export const PodOverviewSchema = z
  .object({
    pod: z.object({ id: z.string(), name: z.string() }),
    range: z.enum(['24h', '7d']),
    from: timestamp.openapi({ description: 'Start of the first hour counted (UTC)' }),
    to: timestamp,
    hours: z
      .array(z.object({ hour: timestamp, ...Counts }))
      .openapi({ description: 'Every hour of the range, oldest first, zeros included' }),
    totals: z.object(Counts),
    denialsByReason: z.array(z.object({ reason: z.string(), calls: z.number().int() })).openapi({ description: 'Most first' }),
    denialsByOrgRule: z
      .array(z.object({ rule: z.string(), calls: z.number().int() }))
      .openapi({ description: "Denials by an org rule, by the rule's id (or its package), most first" }),
    pendingApprovals: z.number().int().openapi({ description: "Approvals of the pod's grants waiting for a decision now" }),
    nearestBudget: z
      .array(
        z.object({
          grantId: z.string(),
          target: z.object({ kind: z.string(), id: z.string() }),
          tools: z.array(z.string()),
          calls: z.number().int().openapi({ description: "The tree's budget: calls per window" }),
          windowMs: z.number().int(),
          used: z.number().int().openapi({ description: 'Allowed calls of the whole tree in the window now' }),
          remaining: z.number().int(),
        }),
      )
      .openapi({ description: 'Live grant trees closest to their budget (used over calls), at most 5' }),
  })
  .openapi('PodOverview');
