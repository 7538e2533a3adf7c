import { decisions } from '../kernel/decisions/catalogue';
import type { Knex } from 'knex';
import type { Principal } from '../kernel/principals';
import { enforce } from '../policy/enforce';
import type { PodsDeps } from './deps';
import { countOwners, findMember, findPod, type PodRow, type Role } from './repository';

export type PodAction =
  | 'pod.read'
  | 'overview.read'
  | 'members.list'
  | 'members.add'
  | 'members.remove'
  | 'agents.read'
  | 'agents.install'
  | 'agents.update'
  | 'agents.uninstall'
  | 'agents.consent'
  | 'tokens.list'
  | 'tokens.create'
  | 'tokens.delete'
  | 'runtime.read'
  | 'runtime.start'
  | 'runtime.stop'
  | 'webhooks.create'
  | 'webhooks.list'
  | 'webhooks.read'
  | 'webhooks.delete';

export interface PodActionFacts {
  /** The member an action is about (members.add / members.remove). */
  member?: { role: Role };
  /** The pod's webhooks now and the most it may have (webhooks.create). */
  webhooks?: { count: number; max: number };
}

/**
 * Gathers the facts about the caller and the pod, asks `pods/access` and enforces the answer.
 * A pod that does not exist and a pod the caller is not in look the same: 404.
 */
export async function authorizePodAction(
  deps: Pick<PodsDeps, 'db' | 'policy'>,
  principal: Principal,
  podId: string,
  action: PodAction,
  facts: PodActionFacts = {},
  db: PodsDeps['db'] | Knex.Transaction = deps.db,
): Promise<PodRow> {
  const pod = await findPod(db, podId);
  const membership = pod && principal.kind === 'human' ? await findMember(db, podId, principal.userId) : undefined;
  const ownerCount = action === 'members.remove' && pod ? await countOwners(db, podId) : undefined;
  const decision = deps.policy.evaluate(decisions.podsAccess, {
    action,
    caller: { kind: principal.kind, role: membership?.role ?? null },
    member: facts.member,
    pod: pod ? { owner_count: ownerCount ?? null, ...(facts.webhooks ? { webhooks: facts.webhooks } : {}) } : undefined,
  });
  enforce(decision);
  if (!pod) throw new Error('pods/access allowed an action on a pod that does not exist');
  return pod;
}
