import { digestOf } from '../../kernel/digest';
import { ApiError } from '../../kernel/errors';
import { newIdAt } from '../../kernel/ids';
import { UNKNOWN_SESSION, type TreeSession } from '../../budget/sliding-window';
import type { CheckingBroker } from '../authenticator';
import type { BrokerDeps } from '../deps';
import type { VerifiedSubject } from '../reads';
import { NO_PRINCIPAL_FACTS } from '../tree-facts';
import type { CallSubject, CheckRequest, Resolved, Start } from './stages';

export type ResolveDeps = Pick<BrokerDeps, 'clock' | 'reads'>;

/**
 * The first stage: reads only, all of them through one interface (broker/reads.ts: plain, or the
 * speed-ups' caches). The chain first; another broker's grant stops there (nothing else is
 * looked at: not the forwarded token, the approval or the tree's Redis state, so its 404 is an
 * unknown grant's, whatever is failing). Otherwise the approval, then the tree at its current
 * version (read before any fact), then under that version the broker's token, the subject and
 * the tree's facts.
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
  const chain = retry?.previous.chain ?? (await deps.reads.chainOf(request.grantId));
  if (!chain || chain[0]!.broker_id !== broker.brokerId) {
    // Only a broker whose token is valid right now learns anything, even that a grant does not exist.
    await deps.reads.confirmBroker(broker);
    if (!chain) throw new ApiError('not_found', 'no such grant');
    const nobody = { principal: null, source: 'subject_token' } as const;
    return resolvedOf(start, { nowMs: deps.clock.now(), chain, subject: nobody, facts: NO_PRINCIPAL_FACTS, session: UNKNOWN_SESSION });
  }
  const approval = retry ? retry.previous.approval : request.approvalId ? await deps.reads.approvalOf(request.approvalId) : undefined;

  const nowMs = deps.clock.now();
  const known = retry && { version: retry.treeVersion, session: retry.session ?? UNKNOWN_SESSION };
  const tree = await deps.reads.treeAt(chain[0]!.root_id, nowMs, known);
  await tree.confirmBroker(broker);
  const subject: CallSubject = request.principal
    ? { principal: request.principal, source: 'asserted' }
    : { principal: principalFor(await tree.subjectOf(request.subjectToken ?? '', nowMs), request.grantId), source: 'subject_token' };
  const facts = subject.principal ? await tree.factsOf(chain, subject.principal) : NO_PRINCIPAL_FACTS;
  return resolvedOf(start, { nowMs, chain, treeVersion: tree.version, subject, facts, approval, session: tree.session });
}

/**
 * The start and what was read, member by member: `{ ...start, nowMs, … }` (an object spread then
 * more members) took V8's slow path, several microseconds a check (1% of its CPU in a --cpu-prof
 * of the bench's check).
 */
function resolvedOf(start: Start, read: Omit<Resolved, keyof Start>): Resolved {
  return {
    broker: start.broker,
    request: start.request,
    callId: start.callId,
    argsDigest: start.argsDigest,
    requestedAt: start.requestedAt,
    nowMs: read.nowMs,
    chain: read.chain,
    treeVersion: read.treeVersion,
    subject: read.subject,
    facts: read.facts,
    approval: read.approval,
    session: read.session,
  };
}

/**
 * The verified token's principal, when the token is good for this grant: an access token stands for
 * its agent on its own grant alone, so with any other grant it verifies as nobody (the check's
 * `subject_token_invalid`), as a token for another audience would.
 */
function principalFor(verified: VerifiedSubject | null, grantId: string) {
  if (!verified) return null;
  return verified.grantId === undefined || verified.grantId === grantId ? verified.principal : null;
}
