import { DependencyUnavailableError } from '../../kernel/dependency';
import type { CheckingBroker } from '../authenticator';
import type { BrokerDeps } from '../deps';
import { charge } from './charge';
import { credentialFor } from './credential';
import { decide } from './decide';
import { recallApproval } from './recall-approval';
import { resolve } from './resolve';
import { refuseWithoutCredential, settle } from './settle';
import type { CheckAnswer, CheckRequest } from './stages';

export type { CheckAnswer, CheckRequest } from './stages';

/** A tree whose facts change between every read and charge is refused rather than looped on. */
const MAX_ATTEMPTS = 4;

/**
 * The broker pre-call check, in four stages: resolve (the chain, the broker's
 * ownership of it, the subject, the tree's facts under its current version; reads only), decide
 * (broker/check on those facts; pure; a call that needs an approval it did not bring is decided
 * again with the open approval of the identical call, ./recall-approval.ts), charge (one budget
 * script over the chain, which also says whether the facts were stale) and settle (the approval
 * and the call record, then the answer).
 * A check that asks for a credential has it minted between decide and charge (./credential.ts).
 * Warm, a check costs one Redis round trip and one share of a group-committed INSERT.
 *
 * The broker is authenticated by the route before this runs; another broker's grant is a 404
 * with nothing else looked at.
 */
export function checkCall(deps: BrokerDeps, broker: CheckingBroker, request: CheckRequest): Promise<CheckAnswer> {
  const { tracer } = deps;
  // The grant tool's name and the grant: never its arguments or a token.
  const attributes = { 'gen_ai.tool.name': request.tool, 'grant_broker.grant.id': request.grantId };
  return tracer.span(
    'check',
    async (stages) => {
      let resolved = await stages.span('resolve', () => resolve(deps, broker, request));
      for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt += 1) {
        let verdict = stages.span('decide', () => decide(deps, resolved));
        // Asked before, from another session or process: decided again with that approval.
        const recalled = await recallApproval(deps, resolved, verdict);
        if (recalled) {
          resolved = recalled;
          verdict = stages.span('decide', () => decide(deps, recalled));
        }
        // Before the unit: a call whose credential cannot be had takes none and spends no approval.
        const minted = await credentialFor(deps, resolved, verdict);
        if (minted.kind === 'failed') return refuseWithoutCredential(deps, resolved, verdict, minted.detail);
        const charged = await stages.span('charge', () => charge(deps, resolved, verdict));
        if (charged.kind === 'relabelled') {
          // Another call labelled the tree since: the same facts, decided again on its labels.
          resolved = { ...resolved, session: charged.session };
          continue;
        }
        if (charged.kind !== 'stale') {
          const credential = minted.kind === 'minted' ? minted.credential : undefined;
          const settled = resolved;
          const answer = await stages.span('settle', () => settle(deps, settled, verdict, charged, credential));
          // What a gateway keys its cached listing of the grant by: it moves with every change to the tree.
          // Object.assign, not a spread followed by a member (V8's slow path).
          return settled.treeVersion === undefined ? answer : Object.assign({}, answer, { grantVersion: settled.treeVersion });
        }
        if (attempt < MAX_ATTEMPTS) {
          const retry = { previous: resolved, treeVersion: charged.treeVersion, session: charged.session };
          resolved = await stages.span('resolve', () => resolve(deps, broker, request, retry));
        }
      }
      throw new DependencyUnavailableError('the facts of this grant kept changing; try again');
    },
    attributes,
  );
}
