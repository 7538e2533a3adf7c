import { z } from 'zod';

/**
 * The facts several decisions share, each with one schema (and one TypeScript builder): a grant,
 * a chain of grants, a connection, the facts of a grant as the grant decisions read them.
 */
export const Millis = z.number().int().describe('milliseconds since the epoch');

/** Resource patterns by dimension; a dimension that is absent is unrestricted. */
export const ResourcesFact = z.strictObject({
  repositories: z.array(z.string()).optional(),
  refs: z.array(z.string()).optional(),
  paths: z.array(z.string()).optional(),
});
export type ResourcesFact = z.infer<typeof ResourcesFact>;

export const GrantFact = z.strictObject({
  id: z.string(),
  target: z.strictObject({ kind: z.enum(['pod', 'seat']), id: z.string(), pod_id: z.string() }),
  audience_mode: z.enum(['members', 'listed']),
  audience: z.array(z.string()),
  tools: z.array(z.string()),
  write_mode: z.enum(['read', 'approve', 'write']),
  budget: z.strictObject({ calls: z.number().int(), window_ms: z.number().int() }),
  expires_at_ms: Millis,
  revoked: z.boolean(),
  resources: ResourcesFact.optional().describe('absent: the grant constrains no resource'),
});
export type GrantFact = z.infer<typeof GrantFact>;

export const ConnectionFact = z.strictObject({
  id: z.string(),
  owner_id: z.string(),
  kind: z.string(),
  status: z.enum(['connected', 'disconnected']),
  tools: z.record(z.string(), z.enum(['read', 'write'])).describe('enabled tools by name, each read or write'),
});
export type ConnectionFact = z.infer<typeof ConnectionFact>;

/** The one builder of the connection fact, whatever query loaded the row. */
export function toConnectionFact(
  row: Pick<ConnectionFact, 'id' | 'owner_id' | 'kind' | 'status'>,
  tools: ConnectionFact['tools'],
): ConnectionFact {
  return { id: row.id, owner_id: row.owner_id, kind: row.kind, status: row.status, tools };
}

/** Where a tool's repository, ref and path sit in its call's `args` (RFC 6901 pointers). */
export interface ToolResourcePointers {
  repository?: string;
  ref?: string;
  path?: string;
}

/** A grant with what places it in its tree: the broker check's chain links. */
export const ChainLink = GrantFact.extend({
  parent_id: z.string().nullable(),
  root_id: z.string(),
  broker_id: z.string(),
  connection_id: z.string(),
});
export type ChainLink = z.infer<typeof ChainLink>;

/** `input.grant` of the grant decisions (data.grants.scope): the chain, current members, the connection. */
export const GrantFacts = z.strictObject({
  chain: z.array(GrantFact).describe('the grant first, its root last'),
  members: z.array(z.string()).describe('current members of the target pod, humans and installed agents'),
  connection: ConnectionFact,
});
export type GrantFacts = z.infer<typeof GrantFacts>;

export const Caller = z.strictObject({ kind: z.enum(['human', 'agent']), id: z.string() });
