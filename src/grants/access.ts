import { decisions } from '../kernel/decisions/catalogue';
import type { Knex } from 'knex';
import type { GrantsDeps } from './deps';
import type { AgentPrincipal, HumanPrincipal } from '../kernel/principals';
import { PolicyUnavailableError, type Decided } from '../policy/engine';
import { enforce } from '../policy/enforce';
import { loadGrantFactsWithMembers, policyFacts, type GrantFacts, type LoadedGrant } from './facts';
import type { GrantView } from './presenters';

type Queryable = GrantsDeps['db'] | Knex.Transaction;

export type GrantCaller = HumanPrincipal | AgentPrincipal;

/** The caller as every grant decision reads it. */
export function callerFact(principal: GrantCaller): { kind: 'human' | 'agent'; id: string } {
  return principal.kind === 'human' ? { kind: 'human', id: principal.userId } : { kind: 'agent', id: principal.agentId };
}

/** Asks `grants/read` about one grant; the answer carries the status and effective audience. */
export function readDecision(
  deps: Pick<GrantsDeps, 'policy' | 'clock'>,
  caller: ReturnType<typeof callerFact>,
  grant: GrantFacts | undefined,
): Decided<typeof decisions.grantsRead> {
  return deps.policy.evaluate(decisions.grantsRead, { now_ms: deps.clock.now(), caller, grant });
}

/** What only `grants/read` computes; an allow without it is a broken policy, which fails closed. */
export function viewOf(decision: Decided<typeof decisions.grantsRead>): GrantView {
  const { status, audience } = decision;
  if (!status || !audience) throw new PolicyUnavailableError('grants/read allowed without a status or an audience');
  return { status, audience };
}

export interface ReadableGrant {
  facts: LoadedGrant;
  members: string[];
  view: GrantView;
}

/** Loads a grant the caller may read, or refuses with a 404 that says nothing more. */
export async function readableGrant(
  deps: GrantsDeps,
  principal: GrantCaller,
  grantId: string,
  db: Queryable = deps.db,
): Promise<ReadableGrant> {
  const { facts, members } = await loadGrantFactsWithMembers(deps.lookups, db, grantId);
  const decision = readDecision(deps, callerFact(principal), facts ? policyFacts(facts, members) : undefined);
  enforce(decision);
  return { facts: facts as LoadedGrant, members, view: viewOf(decision) };
}
