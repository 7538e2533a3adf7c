import { decisions } from '../kernel/decisions/catalogue';
import type { Knex } from 'knex';
import type { GrantsDeps } from './deps';
import type { AgentPrincipal } from '../kernel/principals';
import { ApiError } from '../kernel/errors';
import { newId } from '../kernel/ids';
import { PolicyUnavailableError, type Decided } from '../policy/engine';
import { enforce } from '../policy/enforce';
import { emitGrantEvent } from './events';
import { loadGrantFacts, policyFacts, toGrantFact, type LoadedGrant } from './facts';
import { presentGrant } from './presenters';
import { countLiveChildren, insertGrant, lockTree, rootIdOf, type GrantRow } from './repository';
import { inheritResources } from './resource-patterns';
import type { AttenuateGrantInput } from './schemas';

/**
 * The child as requested, every omitted field inherited from the parent. Whether it is narrower
 * is for `grants/attenuate` to say; this only fills in the blanks.
 */
async function childOf(
  deps: GrantsDeps,
  trx: Knex.Transaction,
  parent: GrantRow,
  body: AttenuateGrantInput,
  createdBy: string,
  now: number,
): Promise<GrantRow> {
  const target = body.target ?? { kind: parent.target_kind, id: parent.target_id };
  const seat = target.kind === 'seat' ? await deps.lookups.agent(trx, target.id) : undefined;
  const isSeat = target.kind === 'seat';
  const id = newId('grant');
  return {
    id,
    parent_id: parent.id,
    root_id: parent.root_id,
    depth: parent.depth + 1,
    connection_id: parent.connection_id,
    installation_id: parent.installation_id,
    broker_id: parent.broker_id,
    // An unknown kind or seat is kept as asked so the policy can name `target` as widening.
    target_kind: target.kind as GrantRow['target_kind'],
    target_id: target.id,
    target_pod_id: target.kind === 'pod' ? target.id : (seat?.pod_id ?? ''),
    audience_mode: body.audience || isSeat ? 'listed' : parent.audience_mode,
    audience: body.audience ?? (isSeat ? [target.id] : parent.audience),
    tools: body.tools ?? parent.tools,
    write_mode: body.writeMode ?? parent.write_mode,
    budget_calls: body.budget?.calls ?? parent.budget_calls,
    budget_window_ms: body.budget?.windowMs ?? Number(parent.budget_window_ms),
    expires_at: body.expiresAt ? new Date(body.expiresAt) : parent.expires_at,
    resources: inheritResources(parent.resources, body.resources),
    created_at: new Date(now),
    revoked_at: null,
    granted_by: parent.granted_by,
    created_by: createdBy,
  };
}

/** The MCP host a consent makes a child for (CONTRACT §20), and the person who consented. */
export interface OAuthClientOfChild {
  clientId: string;
  name: string;
  consentedBy: string;
}

function enforceNaming(decision: Decided<typeof decisions.grantsAttenuate>): void {
  try {
    enforce(decision);
  } catch (error) {
    const widened = decision.widened ?? [];
    if (error instanceof ApiError && error.code === 'grant_widening' && widened.length > 0) {
      throw new ApiError('grant_widening', `the child would widen the parent's ${widened.join(', ')}`, error.extensions);
    }
    throw error;
  }
}

/**
 * An installed agent narrows a grant it may use into a child. The tree's root row is locked
 * first, so a revocation of the same tree either lands before (and the parent is not usable) or
 * after (and revokes this child too): never an active child under a revoked parent.
 */
export async function attenuateGrant(
  deps: GrantsDeps,
  principal: AgentPrincipal,
  grantId: string,
  body: AttenuateGrantInput,
  oauthClient?: OAuthClientOfChild,
) {
  await deps.attenuationLimit.take(principal.agentId);
  const rootId = await rootIdOf(deps.db, grantId);
  return deps.db.transaction(async (trx) => {
    if (rootId) await lockTree(trx, rootId);
    const now = deps.clock.now();
    const parent = await loadGrantFacts(deps.lookups, trx, grantId);
    const members = parent ? await deps.lookups.memberIds(trx, parent.grant.target_pod_id) : [];
    const agent = await deps.lookups.agent(trx, principal.agentId);
    const child = parent ? await childOf(deps, trx, parent.grant, body, principal.agentId, now) : undefined;
    const decision = deps.policy.evaluate(decisions.grantsAttenuate, {
      now_ms: now,
      max_depth: deps.limits.maxDelegationDepth,
      max_live_children: deps.limits.maxLiveChildrenPerGrant,
      live_children: parent ? await countLiveChildren(trx, grantId, now) : 0,
      caller: { kind: 'agent', id: principal.agentId, pod_id: principal.podId, desired_state: agent?.desired_state ?? 'stopped' },
      grant: parent ? policyFacts(parent, members) : undefined,
      child: child ? toGrantFact(child) : undefined,
    });
    enforceNaming(decision);
    const { grant: parentRow, chain, connection } = parent as LoadedGrant;
    const inserted = await insertGrant(
      trx,
      oauthClient
        ? {
            ...child!,
            oauth_client_id: oauthClient.clientId,
            oauth_client_name: oauthClient.name,
            oauth_consented_by: oauthClient.consentedBy,
          }
        : child!,
    );
    const { child_status: status, child_audience: audience } = decision;
    if (!status || !audience) throw new PolicyUnavailableError('grants/attenuate allowed without the child status or audience');
    const grant = presentGrant(inserted, { status, audience });
    // The child's chain is the parent's with the child in front.
    const facts = policyFacts({ chain: [toGrantFact(inserted), ...chain], connection }, members);
    await emitGrantEvent(trx, deps, 'grant.attenuated', facts, { grant, parentId: parentRow.id });
    return grant;
  });
}
