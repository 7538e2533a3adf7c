import type { Knex } from 'knex';
import type { HumanPrincipal } from '../kernel/principals';
import { ApiError } from '../kernel/errors';
import { newId } from '../kernel/ids';
import { emitEvent } from '../events/outbox';
import { authorizePodAction } from './access';
import type { PodsDeps } from './deps';
import {
  agentIdsOfPod,
  deleteMember,
  findMember,
  insertMember,
  insertPod,
  listMembers,
  lockOwners,
  type MemberRow,
  type PodRow,
  type Role,
} from './repository';

export async function createPod(deps: PodsDeps, caller: HumanPrincipal, name: string): Promise<PodRow> {
  const pod: PodRow = { id: newId('pod'), name, created_by: caller.userId, created_at: new Date(deps.clock.now()) };
  await deps.db.transaction(async (trx) => {
    await insertPod(trx, pod);
    await insertMember(trx, { pod_id: pod.id, member_id: caller.userId, member_kind: 'human', role: 'owner', added_by: caller.userId });
  });
  return pod;
}

/** An installed agent becomes a member of its pod, in the install's transaction (src/registry). */
export async function addAgentMember(trx: Knex.Transaction, podId: string, agentId: string, addedBy: string): Promise<void> {
  await insertMember(trx, { pod_id: podId, member_id: agentId, member_kind: 'agent', role: 'member', added_by: addedBy });
}

export async function addMember(deps: PodsDeps, caller: HumanPrincipal, podId: string, userId: string, role: Role): Promise<MemberRow> {
  await authorizePodAction(deps, caller, podId, 'members.add', { member: { role } });
  return deps.db.transaction(async (trx) => {
    const member = await insertMember(trx, { pod_id: podId, member_id: userId, member_kind: 'human', role, added_by: caller.userId });
    if (!member) throw new ApiError('member_exists', `${userId} is already a member of the pod`);
    await emitEvent(trx, {
      type: 'pod.member_added',
      podId,
      data: { podId, memberId: userId, kind: 'human', role },
      agentIds: await agentIdsOfPod(trx, podId),
    });
    return member;
  });
}

/**
 * Removes a human member. Membership decides the effective audience of pod grants, so the
 * removal also invalidates cached broker facts for grants in this pod; a repeat (the member is
 * gone: 404) stamps them again, which re-confirms a removal that answered 503.
 */
export async function listPodMembers(deps: PodsDeps, caller: HumanPrincipal, podId: string): Promise<MemberRow[]> {
  await authorizePodAction(deps, caller, podId, 'members.list');
  return listMembers(deps.db, podId);
}

export async function removeMember(deps: PodsDeps, caller: HumanPrincipal, podId: string, userId: string): Promise<void> {
  const removed = await deps.invalidation.change(async (trx, touch) => {
    // Lock the member row so two removals cannot both pass the last-owner rule.
    await lockOwners(trx, podId);
    const member = await findMember(trx, podId, userId);
    await authorizePodAction(deps, caller, podId, 'members.remove', { member: member && { role: member.role } }, trx);
    await touch('pod', podId);
    if (!member || member.member_kind !== 'human') return false;
    await deleteMember(trx, podId, userId);
    await emitEvent(trx, {
      type: 'pod.member_removed',
      podId,
      data: { podId, memberId: userId, kind: 'human' },
      agentIds: await agentIdsOfPod(trx, podId),
    });
    return true;
  });
  if (!removed) throw new ApiError('not_found', 'no such human member in the pod');
}
