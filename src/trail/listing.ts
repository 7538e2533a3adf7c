import { decodeCursor, encodeCursor } from '../kernel/cursor';
import type { AgentPrincipal, HumanPrincipal } from '../kernel/principals';
import type { TrailDeps } from './deps';
import { presentCallRecord } from './presenters';
import { callRecordsAfter, type CallFilter } from './repositories/call-record-listings';

type CallFilterQuery = Omit<CallFilter, 'from' | 'to' | 'credential'> & { from?: string; to?: string; credential?: string };

/** The call trail of a grant, newest first, for whoever may read the grant (asked first). */
export async function listGrantCalls(
  deps: TrailDeps,
  principal: HumanPrincipal | AgentPrincipal,
  grantId: string,
  query: { limit: number; cursor?: string } & CallFilterQuery,
) {
  const after = decodeCursor(query.cursor, 'call');
  await deps.readableGrant(principal, grantId);
  const filter: CallFilter = {
    credential: query.credential === undefined ? undefined : Buffer.from(query.credential.slice('sha256:'.length), 'hex'),
    outcome: query.outcome,
    reason: query.reason,
    tool: query.tool,
    principal: query.principal,
    from: query.from === undefined ? undefined : new Date(query.from),
    to: query.to === undefined ? undefined : new Date(query.to),
  };
  const rows = await callRecordsAfter(deps.db, grantId, after, query.limit + 1, filter, new Date(deps.clock.now()));
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  return {
    items: page.map(presentCallRecord),
    nextCursor: rows.length > query.limit && last ? encodeCursor(last.requested_at, last.id) : null,
  };
}
