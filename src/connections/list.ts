import { decisions } from '../kernel/decisions/catalogue';
import type { Database } from '../db/database';
import type { PolicyEngine } from '../policy/engine';
import { decodeCursor, encodeCursor } from '../kernel/cursor';
import type { HumanPrincipal } from '../kernel/principals';
import { enforce } from '../policy/enforce';
import { present } from './presenters';
import { connectionsOfOwnerAfter, toolsOfConnections } from './repository';

/**
 * The connections a person may read, newest first, with their tools. Postgres finds the ones they
 * own (the only ones the read rule could allow); `connections/access` decides that the caller may
 * list at all and then reads every row as `connection.read`, so a connection appears exactly when
 * the caller could open it. The cursor follows the rows scanned, so a dropped row never stalls a page.
 */
export async function listConnectionsOfCaller(
  deps: { db: Database; policy: PolicyEngine },
  caller: HumanPrincipal,
  query: { limit: number; cursor?: string },
) {
  const after = decodeCursor(query.cursor);
  const callerFact = { kind: caller.kind, id: caller.userId };
  enforce(deps.policy.evaluate(decisions.connectionsAccess, { action: 'connections.list', caller: callerFact }));
  const rows = await connectionsOfOwnerAfter(deps.db, caller.userId, after, query.limit + 1);
  const scanned = rows.slice(0, query.limit);
  const readable = scanned.filter(
    (row) =>
      deps.policy.evaluate(decisions.connectionsAccess, {
        action: 'connection.read',
        caller: callerFact,
        connection: { owner_id: row.owner_id },
      }).allow,
  );
  const tools = await toolsOfConnections(
    deps.db,
    readable.map((row) => row.id),
  );
  const last = scanned.at(-1);
  return {
    items: readable.map((row) => present(row, tools.get(row.id) ?? [])),
    nextCursor: rows.length > query.limit && last ? encodeCursor(last.created_at, last.id) : null,
  };
}
