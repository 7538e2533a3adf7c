import jwt from 'jsonwebtoken';
import { hashToken } from '../../credentials/tokens';
import { digestOf } from '../../kernel/digest';
import { ApiError } from '../../kernel/errors';
import { newIdAt } from '../../kernel/ids';
import { verifyBroker, type CheckingBroker } from '../authenticator';
import type { BrokerDeps } from '../deps';
import { readTreeFacts, runtimeTokenExpiry } from '../repository';
import { NO_PRINCIPAL_FACTS, type RememberedSubject } from '../tree-facts';
import { UNKNOWN_SESSION, type TreeSession } from '../../budget/sliding-window';
import type { CallSubject, CheckRequest, Resolved, Start } from './stages';

export type ResolveDeps = Pick<BrokerDeps, 'db' | 'clock' | 'chains' | 'trees' | 'brokerTokens' | 'resolveCredential' | 'approvals'>;

/**
 * The first stage: reads only. The chain first; another broker's grant stops there (nothing else
 * is looked at: not the forwarded token, the approval or the tree's Redis state, so its 404 is an
 * unknown grant's, whatever is failing). Otherwise the approval, then the tree's snapshot (its
 * version read before any fact), then what the snapshot does not already vouch for: the broker's
 * token, the subject and the tree's facts, read under that version and remembered in it.
 *
 * A retry (the budget script found the version moved) keeps the chain and the approval and reads
 * again, under the new version, what the version covers.
 */
export async function resolve(
  deps: ResolveDeps,
  broker: CheckingBroker,
  request: CheckRequest,
  retry?: { previous: Resolved; treeVersion: string; session?: TreeSession },
): Promise<Resolved> {
  // Made once per check, whatever the attempts: the record's id and time, the digest it keeps.
  const requestedAtMs = deps.clock.now();
  const start: Start = retry?.previous ?? {
    broker,
    request,
    // The id carries the record's time: the outcome report finds the record's day from it.
    callId: newIdAt('call', requestedAtMs),
    argsDigest: digestOf(request.args),
    requestedAt: new Date(requestedAtMs),
  };
  const chain = retry?.previous.chain ?? (await deps.chains.get(request.grantId));
  if (!chain || chain[0]!.broker_id !== broker.brokerId) {
    // Only a broker whose token is valid right now learns anything, even that a grant does not exist.
    if (broker.remembered) await verifyBroker(deps, broker.tokenHash);
    if (!chain) throw new ApiError('not_found', 'no such grant');
    const nobody = { principal: null, source: 'subject_token' } as const;
    return { ...start, nowMs: deps.clock.now(), chain, subject: nobody, facts: NO_PRINCIPAL_FACTS, session: UNKNOWN_SESSION };
  }
  const approval = retry ? retry.previous.approval : request.approvalId ? await deps.approvals.factOf(request.approvalId) : undefined;

  const rootId = chain[0]!.root_id;
  const nowMs = deps.clock.now();
  const keys = {
    brokerTokenHash: broker.tokenHash,
    subjectTokenHash: request.principal ? null : hashToken(request.subjectToken ?? ''),
    grantId: chain[0]!.id,
  };
  const snapshot = retry ? deps.trees.renew(rootId, retry.treeVersion, nowMs, retry.session) : await deps.trees.snapshotOf(rootId, nowMs);
  const recalled = snapshot.recall(keys, request.principal, nowMs);

  if (!recalled.brokerConfirmed && broker.remembered) await verifyBroker(deps, broker.tokenHash);
  const verified = request.principal || recalled.subject ? undefined : await verifySubject(deps, request.subjectToken ?? '', nowMs);
  const subject: CallSubject = request.principal
    ? { principal: request.principal, source: 'asserted' }
    : { principal: (recalled.subject ?? verified)?.principal ?? null, source: 'subject_token' };
  // What the snapshot did not vouch for is read now and remembered in it; a warm check reads nothing.
  let facts = recalled.facts;
  if (!facts || !recalled.brokerConfirmed || verified) {
    const podIds = [...new Set(chain.map((link) => link.target.pod_id))];
    facts ??= subject.principal ? await readTreeFacts(deps.db, { chain, principal: subject.principal, podIds }) : NO_PRINCIPAL_FACTS;
    snapshot.remember(keys, { subject: verified, principal: subject.principal, facts, podCount: podIds.length });
  }
  return { ...start, nowMs, chain, snapshot, subject, facts, approval, session: snapshot.session };
}

/**
 * The forwarded subject token, verified (so a broker cannot act for an identity it does not
 * hold), with the time it stops being valid; undefined when it is unknown, expired, deleted or
 * a broker token: nobody to check the call for. Whether an asserted principal, or none, may go
 * on is the policy's call.
 */
async function verifySubject(deps: ResolveDeps, token: string, now: number): Promise<RememberedSubject | undefined> {
  const verified = await deps.resolveCredential(token);
  if (verified?.kind === 'human') {
    const claims = jwt.decode(token) as { exp?: number } | null;
    return { principal: { kind: 'user', id: verified.userId }, expiresAtMs: typeof claims?.exp === 'number' ? claims.exp * 1000 : now };
  }
  if (verified?.kind === 'agent') {
    return { principal: { kind: 'agent', id: verified.agentId }, expiresAtMs: await runtimeTokenExpiry(deps.db, verified.tokenId) };
  }
  return undefined;
}
