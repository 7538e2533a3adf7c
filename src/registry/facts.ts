import type { Knex } from 'knex';
import type { Database } from '../db/database';
import { findAgentById, type AgentRow } from './repository';

type Queryable = Database | Knex.Transaction;

/** What other domains read of the agent registry (registry/repository.ts is this domain's own). */
export type { AgentRow } from './repository';

/** An installed agent by id; undefined once it is uninstalled. */
export function agentById(db: Queryable, agentId: string): Promise<AgentRow | undefined> {
  return findAgentById(db, agentId);
}
