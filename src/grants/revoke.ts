import { decisions } from '../kernel/decisions/catalogue';
import type { GrantsDeps } from './deps';
import type { HumanPrincipal } from '../kernel/principals';
import { iso } from '../kernel/schema';
import { enforce } from '../policy/enforce';
import { callerFact, readDecision, viewOf } from './access';
import { emitGrantEvent } from './events';
import { loadGrantFacts, policyFacts, toGrantFact, type LoadedGrant } from './facts';
import { presentGrant } from './presenters';
import { lockTree, revokeSubtree, rootIdOf } from './repository';

/**
 * Revokes a grant and every descendant in one transaction with one timestamp.
 * Revoking again changes nothing and answers the same. The tree's root row is locked first, the
 * same lock attenuation takes, so no child can slip in under a grant being revoked.
 */
export async function revokeGrant(deps: GrantsDeps, principal: HumanPrincipal, grantId: string) {
  const rootId = await rootIdOf(deps.db, grantId);
  const caller = callerFact(principal);
  // A repeat changes no row but stamps the tree again: that is how a client re-confirms a revoke
  // that answered 503 invalidation_pending.
  const { facts, members } = await deps.invalidation.change(async (trx, touch) => {
    if (rootId) await lockTree(trx, rootId);
    const found = await loadGrantFacts(deps.lookups, trx, grantId);
    const members = found ? await deps.lookups.memberIds(trx, found.grant.target_pod_id) : [];
    enforce(deps.policy.evaluate(decisions.grantsRevoke, { caller, grant: found ? policyFacts(found, members) : undefined }));
    const { connection } = found as LoadedGrant;
    const revokedAt = new Date(deps.clock.now());
    const revoked = await revokeSubtree(trx, grantId, revokedAt);
    await deps.expireApprovals(
      trx,
      revoked.map((row) => row.id),
      revokedAt,
    );
    for (const row of revoked) {
      // Only who may read each grant matters here, and that depends on its own target alone.
      const readable = policyFacts({ chain: [toGrantFact(row)], connection }, members);
      await emitGrantEvent(trx, deps, 'grant.revoked', readable, {
        grantId: row.id,
        rootId: row.root_id,
        revokedAt: iso(row.revoked_at),
        cascadedFrom: row.id === grantId ? null : grantId,
      });
    }
    await touch('grant-tree', grantId);
    return { facts: await loadGrantFacts(deps.lookups, trx, grantId), members };
  });
  // Best effort, after the commit: the tree refuses every call from now on whatever its session
  // says, and its keys expire on their own.
  if (rootId === grantId) await deps.forgetTreeSession(rootId).catch(() => undefined);
  const current = facts as LoadedGrant;
  const view = viewOf(readDecision(deps, caller, policyFacts(current, members)));
  return presentGrant(current.grant, view);
}
