import { decisions } from '../kernel/decisions/catalogue';
import type { GrantsDeps } from './deps';
import { enforce } from '../policy/enforce';
import { callerFact, readableGrant, readDecision, viewOf, type GrantCaller } from './access';
import { decodeCursor, encodeCursor } from '../kernel/cursor';
import { loadGrantFactsMany, policyFacts } from './facts';
import { presentGrant, type GrantView } from './presenters';
import { readCandidatesAfter } from './repository';

export async function readGrant(deps: GrantsDeps, principal: GrantCaller, grantId: string) {
  const { facts, view } = await readableGrant(deps, principal, grantId);
  return presentGrant(facts.grant, view);
}

/**
 * The grants of a pod (targeting it or one of its seats) that the caller can read, newest first.
 * Postgres narrows the rows to those the caller could read at all; readability and status are
 * then decided per grant by `grants/read`, so the page is filled by scanning batches until it
 * holds one more readable grant than asked (which proves a next page).
 */
export async function listPodGrants(
  deps: GrantsDeps,
  principal: GrantCaller,
  podId: string,
  query: { status?: GrantView['status']; limit: number; cursor?: string },
) {
  const caller = callerFact(principal);
  let after = decodeCursor(query.cursor);
  const members = await deps.lookups.memberIds(deps.db, podId);
  enforce(deps.policy.evaluate(decisions.grantsList, { caller, pod: members.length > 0 ? { members } : undefined }));
  // One more than the page proves a next page; later batches grow, should the policy refuse rows.
  let batchSize = query.limit + 1;
  const found: Array<ReturnType<typeof presentGrant>> = [];
  while (found.length <= query.limit) {
    const rows = await readCandidatesAfter(deps.db, podId, caller, after, batchSize);
    const facts = await loadGrantFactsMany(
      deps.lookups,
      deps.db,
      rows.map((row) => row.id),
    );
    for (const row of rows) {
      const grant = facts.get(row.id);
      const decision = grant && readDecision(deps, caller, policyFacts(grant, members));
      if (!decision?.allow) continue;
      const view = viewOf(decision);
      if (query.status && view.status !== query.status) continue;
      found.push(presentGrant(row, view));
      if (found.length > query.limit) break;
    }
    const last = rows.at(-1);
    if (!last || rows.length < batchSize) break;
    batchSize = Math.min(batchSize * 2, 400);
    after = { at: last.created_at, id: last.id };
  }
  const items = found.slice(0, query.limit);
  const lastItem = items.at(-1);
  const nextCursor = found.length > query.limit && lastItem ? encodeCursor(new Date(lastItem.createdAt as string), lastItem.id) : null;
  return { items, nextCursor };
}
