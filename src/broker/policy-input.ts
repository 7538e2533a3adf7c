import jsonPointer from 'jsonpointer';
import type { DecisionInput, decisions } from '../kernel/decisions/catalogue';
import type { ToolResourcePointers } from '../kernel/decisions/catalogue';
import type { LocalTime } from '../kernel/local-time';
import type { TreeSession } from '../budget/sliding-window';
import type { Chain, MutableFacts } from './tree-facts';
import type { CallPrincipal } from '../kernel/principals';

/** Whose call it is: their own credential, forwarded (preferred), or a principal the broker asserts. */
export interface SubjectInput {
  subjectToken?: string;
  principal?: CallPrincipal;
}

export interface CallSubject {
  /** Who the call is for; null when the forwarded subjectToken did not verify. */
  principal: CallPrincipal | null;
  source: 'subject_token' | 'asserted';
}

export interface CallFacts {
  brokerId: string;
  tool: string;
  args: Record<string, unknown>;
  argsDigest: string;
  /** The approval a re-sent check brings, as approvals/requests reads it. */
  approval?: DecisionInput<typeof decisions.brokerCheck>['approval'];
  subject: CallSubject;
  trustAssertedPrincipal: boolean;
  now: number;
  localTime: LocalTime;
}

/**
 * The input of broker/check/decision (policies/broker/check.rego and the org packages). Facts
 * only; no rule is decided here. `args` enter the input in memory only: the decision event
 * replaces them with a mask (the resource read from them is kept), and the call record keeps
 * their digest.
 */
export function checkInput(
  call: CallFacts,
  chain: Chain,
  facts: MutableFacts,
  session: TreeSession,
  members: TreeInputs = PLAIN_TREE_INPUTS,
) {
  const { principal, source } = call.subject;
  const access = Object.hasOwn(facts.connection.tools, call.tool) ? facts.connection.tools[call.tool] : undefined;
  const pointers = access && Object.hasOwn(facts.toolResources, call.tool) ? facts.toolResources[call.tool] : undefined;
  return {
    now_ms: call.now,
    local_time: call.localTime,
    broker_id: call.brokerId,
    tool: { name: call.tool, ...(access ? { access } : {}), ...(pointers ? { resource: pointers } : {}) },
    args: call.args,
    args_digest: call.argsDigest,
    ...(call.approval ? { approval: call.approval } : {}),
    resource: resourceOf(call.args, pointers),
    principal: principal ?? undefined,
    principal_source: source,
    trust_asserted_principal: call.trustAssertedPrincipal,
    ...members.of(chain, facts, principal),
    session: { labels: session.labels, calls: session.calls },
  };
}

export type TreeFacts = ReturnType<typeof buildTreeFacts>;

/**
 * The members of the input that come from the chain and the tree's mutable facts: the same for
 * every check of a grant by one principal until the tree changes (a new facts object). The plain
 * version builds them for each check; src/speedups/memo.ts keeps them per facts object.
 */
export interface TreeInputs {
  of(chain: Chain, facts: MutableFacts, principal: CallPrincipal | null): TreeFacts;
}

export const PLAIN_TREE_INPUTS: TreeInputs = { of: buildTreeFacts };

export function buildTreeFacts(chain: Chain, facts: MutableFacts, principal: CallPrincipal | null) {
  const revoked = new Set(facts.revokedIds);
  return {
    chain: chain.map((grant) => ({ ...grant, revoked: revoked.has(grant.id) })),
    connection: facts.connection,
    // Says only whether the principal is a current member of each pod: all that the effective
    // audience needs to answer for this principal.
    members: principal ? Object.fromEntries(facts.memberOf.map((podId) => [podId, [principal.id]])) : {},
    ...(principal?.kind === 'agent' && facts.desiredState ? { runtime: { desired_state: facts.desiredState } } : {}),
  };
}

/**
 * The strings the tool's pointers find in `args`. A pointer that finds nothing, or anything but
 * a string, leaves its key out: the policy then answers `resource_unknown` wherever the chain
 * constrains that dimension (fail closed).
 */
export function resourceOf(args: Record<string, unknown>, pointers: ToolResourcePointers | undefined) {
  const resource: { repository?: string; ref?: string; path?: string } = {};
  for (const key of ['repository', 'ref', 'path'] as const) {
    const pointer = pointers?.[key];
    if (pointer === undefined) continue;
    const value: unknown = jsonPointer.get(args, pointer);
    if (typeof value === 'string') resource[key] = value;
  }
  return resource;
}
