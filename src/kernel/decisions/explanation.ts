import { z } from 'zod';

/** What would change a refusal: the five answers a denial can give. */
export const UNLOCKS = ['attenuate_from_parent', 'ask_connection_owner', 'request_approval', 'wait', 'none'] as const;

/**
 * Why a broker check was refused and what would change it, exactly as the policy writes it
 * (policies/broker/explanations.rego): the API answers it, the decision event keeps it.
 */
export const Explanation = z.strictObject({
  rule: z.string().max(200).describe('the id of the Rego rule that refused: `broker.check.<reason>`, or an org rule’s own'),
  level: z
    .number()
    .int()
    .min(0)
    .describe('the depth in the tree of the grant that refused (0 is the root); the one nearest the root when several do'),
  grantId: z.string().describe('the grant at that level'),
  dimension: z
    .string()
    .optional()
    .describe('what the level constrains: `tools`, `write_mode`, `repositories`, `refs`, `paths`, `audience`, …'),
  value: z.string().optional().describe("the call's value the level refused"),
  allowed: z.array(z.string()).optional().describe('what the level allows in that dimension'),
  unlock: z.enum(UNLOCKS).describe('what would change the answer'),
});
export type Explanation = z.infer<typeof Explanation>;

/**
 * A session label: a snake_case name of at most 64 characters, like an org reason. A label the
 * schema refuses breaks the decision's output, so the policy is treated as broken (fail closed).
 */
export const SessionLabel = z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, 'a label is a snake_case name of at most 64 characters');
