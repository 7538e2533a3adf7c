import type { Knex } from 'knex';
import type { Database } from '../db/database';
import { agentIdsOfPod, findPod, listMembers, memberIdsOf, type MemberRow, type PodRow } from './repository';

type Queryable = Database | Knex.Transaction;

/** What other domains read of pods (pods/repository.ts is this domain's own). */
export type { MemberRow, PodRow } from './repository';

export function podById(db: Queryable, podId: string): Promise<PodRow | undefined> {
  return findPod(db, podId);
}

/** The pod's members, oldest first. */
export function podMembers(db: Queryable, podId: string): Promise<MemberRow[]> {
  return listMembers(db, podId);
}

/** Current members of a pod, humans and installed agents: what effective audiences are made of. */
export function podMemberIds(db: Queryable, podId: string): Promise<string[]> {
  return memberIdsOf(db, podId);
}

/** Installed agents of a pod: the recipients of pod-wide events. */
export function podAgentIds(db: Queryable, podId: string): Promise<string[]> {
  return agentIdsOfPod(db, podId);
}
