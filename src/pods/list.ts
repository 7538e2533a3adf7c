import { decisions } from '../kernel/decisions/catalogue';
import { decodeCursor, encodeCursor } from '../kernel/cursor';
import type { HumanPrincipal } from '../kernel/principals';
import { enforce } from '../policy/enforce';
import type { PodsDeps } from './deps';
import { presentPod } from './presenters';
import { podsOfMemberAfter } from './repository';

/**
 * The pods a person is a member of, newest first, each with their role. Postgres finds the
 * memberships; `pods/access` decides that the caller may list at all and then reads every listed
 * pod as `pod.read` with the role found, so a pod appears exactly when the caller could open it.
 * The cursor follows the rows scanned, so a pod the policy drops never stalls the next page.
 */
export async function listPodsOfCaller(
  deps: Pick<PodsDeps, 'db' | 'policy'>,
  caller: HumanPrincipal,
  query: { limit: number; cursor?: string },
) {
  const after = decodeCursor(query.cursor);
  enforce(deps.policy.evaluate(decisions.podsAccess, { action: 'pods.list', caller: { kind: caller.kind, role: null } }));
  const rows = await podsOfMemberAfter(deps.db, caller.userId, after, query.limit + 1);
  const scanned = rows.slice(0, query.limit);
  const items = scanned
    .filter(
      (row) => deps.policy.evaluate(decisions.podsAccess, { action: 'pod.read', caller: { kind: caller.kind, role: row.role } }).allow,
    )
    .map((row) => ({ ...presentPod(row), role: row.role }));
  const last = scanned.at(-1);
  return { items, nextCursor: rows.length > query.limit && last ? encodeCursor(last.created_at, last.id) : null };
}
