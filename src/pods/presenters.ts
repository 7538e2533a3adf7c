import { iso } from '../kernel/schema';
import type { MemberRow, PodRow } from './repository';

export function presentPod(pod: PodRow) {
  return { id: pod.id, name: pod.name, createdBy: pod.created_by, createdAt: iso(pod.created_at) };
}

export function presentMember(member: MemberRow) {
  return {
    podId: member.pod_id,
    memberId: member.member_id,
    kind: member.member_kind,
    role: member.role,
    addedBy: member.added_by,
    addedAt: iso(member.added_at),
  };
}
