import type { Knex } from 'knex';
import type { Database } from '../db/database';
import type { ListPosition } from '../kernel/cursor';

export type Role = 'owner' | 'admin' | 'member';
export type MemberKind = 'human' | 'agent';

export interface PodRow {
  id: string;
  name: string;
  created_by: string;
  created_at: Date;
}

export interface MemberRow {
  pod_id: string;
  member_id: string;
  member_kind: MemberKind;
  role: Role;
  added_by: string;
  added_at: Date;
}

type Queryable = Database | Knex.Transaction;

export function findPod(db: Queryable, podId: string): Promise<PodRow | undefined> {
  return db<PodRow>('pods').where({ id: podId }).first();
}

export function findMember(db: Queryable, podId: string, memberId: string): Promise<MemberRow | undefined> {
  return db<MemberRow>('pod_members').where({ pod_id: podId, member_id: memberId }).first();
}

export function listMembers(db: Queryable, podId: string): Promise<MemberRow[]> {
  return db<MemberRow>('pod_members').where({ pod_id: podId }).orderBy('added_at', 'asc').orderBy('member_id', 'asc');
}

/** The ids of a pod's current members, humans and installed agents. */
export async function memberIdsOf(db: Queryable, podId: string): Promise<string[]> {
  const rows: Array<{ member_id: string }> = await db('pod_members').where({ pod_id: podId }).select('member_id');
  return rows.map((row) => row.member_id);
}

/** Locks the pod's owner rows, so two removals cannot both pass the last-owner rule. */
export async function lockOwners(trx: Knex.Transaction, podId: string): Promise<void> {
  await trx.raw('select 1 from pod_members where pod_id = ? and role = ? for update', [podId, 'owner']);
}

export async function countOwners(db: Queryable, podId: string): Promise<number> {
  const row = await db('pod_members').where({ pod_id: podId, role: 'owner' }).count<{ count: string }[]>('* as count');
  return Number(row[0]?.count ?? 0);
}

/** Installed agents of a pod: the recipients of pod-wide events. */
export async function agentIdsOfPod(db: Queryable, podId: string): Promise<string[]> {
  const rows = await db('agents').where({ pod_id: podId }).select('id');
  return rows.map((row: { id: string }) => row.id);
}

export async function insertPod(trx: Knex.Transaction, pod: PodRow): Promise<void> {
  await trx('pods').insert(pod);
}

export async function insertMember(trx: Queryable, member: Omit<MemberRow, 'added_at'>): Promise<MemberRow | undefined> {
  const rows = await trx<MemberRow>('pod_members').insert(member).onConflict(['pod_id', 'member_id']).ignore().returning('*');
  return rows[0];
}

export async function deleteMember(trx: Knex.Transaction, podId: string, memberId: string): Promise<boolean> {
  return (await trx('pod_members').where({ pod_id: podId, member_id: memberId }).delete()) > 0;
}

/**
 * The pods a person is a member of, with their role in each, newest pod first, after a position:
 * a page of `GET /api/pods` (the index on pod_members.member_id finds them).
 */
export function podsOfMemberAfter(
  db: Queryable,
  memberId: string,
  after: ListPosition | null,
  size: number,
): Promise<Array<PodRow & { role: Role }>> {
  const query = db('pods as p')
    .join('pod_members as m', 'm.pod_id', 'p.id')
    .where('m.member_id', memberId)
    .select('p.id', 'p.name', 'p.created_by', 'p.created_at', 'm.role');
  if (after) query.whereRaw('(p.created_at, p.id) < (?, ?)', [after.at, after.id]);
  return query
    .orderBy([
      { column: 'p.created_at', order: 'desc' },
      { column: 'p.id', order: 'desc' },
    ])
    .limit(size);
}

/** Whether a person is an owner or an admin of at least one pod. */
export async function isAdminOfAnyPod(db: Queryable, memberId: string): Promise<boolean> {
  const row = await db('pod_members').where('member_id', memberId).whereIn('role', ['owner', 'admin']).first('pod_id');
  return row !== undefined;
}
