import type { BrokerDeps } from '../deps';
import type { Resolved, Verdict } from './stages';

/**
 * A call that needs a human's approval and came without one: the open approval of this identical
 * call (grant, tool, principal and arguments' digest), if a human was already asked about it. An
 * approval is bound to the call, never to the connection it was asked on (CONTRACT §17): an agent
 * that reconnects, a new MCP session, another gateway process, all bring the same call back, and
 * it is decided again with that approval (pending: `approval_pending`; approved: allowed once).
 * Read only on this path: a check that needs no approval reads nothing more.
 */
export async function recallApproval(deps: Pick<BrokerDeps, 'reads'>, call: Resolved, verdict: Verdict): Promise<Resolved | undefined> {
  if (verdict.kind !== 'ask' || call.approval || call.request.approvalId) return undefined;
  const approval = await deps.reads.openApprovalOf({
    grantId: call.chain[0]!.id,
    tool: call.request.tool,
    principal: verdict.principal,
    argsDigest: call.argsDigest,
    now: new Date(call.nowMs),
  });
  if (!approval) return undefined;
  return { ...call, request: { ...call.request, approvalId: approval.id }, approval };
}
