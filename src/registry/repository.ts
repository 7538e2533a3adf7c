import type { Knex } from 'knex';
import type { Database } from '../db/database';

type Queryable = Database | Knex.Transaction;

export interface AgentRow {
  id: string;
  pod_id: string;
  name: string;
  display_name: string | null;
  description: string | null;
  installed_by: string;
  installed_at: Date;
  desired_state: 'running' | 'stopped';
  runtime_state: 'stopped' | 'starting' | 'running';
  runtime_changed_at: Date | null;
  last_polled_at: Date | null;
}

export interface RuntimeTokenRow {
  id: string;
  agent_id: string;
  name: string;
  token_hash: string;
  created_by: string;
  created_at: Date;
  expires_at: Date | null;
  last_used_at: Date | null;
}

export function findAgentByName(db: Queryable, podId: string, name: string): Promise<AgentRow | undefined> {
  return db<AgentRow>('agents').where({ pod_id: podId, name }).first();
}

/** A page of a pod's agents by name, after `afterName`. */
export function listAgentsOfPod(db: Queryable, podId: string, limit: number, afterName?: string): Promise<AgentRow[]> {
  const query = db<AgentRow>('agents').where({ pod_id: podId }).orderBy('name').limit(limit);
  return afterName === undefined ? query : query.where('name', '>', afterName);
}

export function findAgentById(db: Queryable, agentId: string): Promise<AgentRow | undefined> {
  return db<AgentRow>('agents').where({ id: agentId }).first();
}

export async function insertAgent(
  trx: Knex.Transaction,
  agent: Omit<AgentRow, 'installed_at' | 'last_polled_at'>,
): Promise<AgentRow | undefined> {
  const rows = await trx<AgentRow>('agents').insert(agent).onConflict(['pod_id', 'name']).ignore().returning('*');
  return rows[0];
}

/** Removing the seat removes its membership, tokens and pending events (cascade). */
export async function deleteAgent(trx: Knex.Transaction, agent: AgentRow): Promise<void> {
  await trx('pod_members').where({ pod_id: agent.pod_id, member_id: agent.id }).delete();
  await trx('agents').where({ id: agent.id }).delete();
}

/** The unexpired runtime token with this hash, with its installed agent; undefined when there is none. */
export function findLiveRuntimeToken(
  db: Queryable,
  tokenHash: string,
  now: Date,
): Promise<{ tokenId: string; tokenHash: string; agentId: string; podId: string; agentName: string } | undefined> {
  return db('runtime_tokens as t')
    .join('agents as a', 'a.id', 't.agent_id')
    .where('t.token_hash', tokenHash)
    .andWhere((q) => q.whereNull('t.expires_at').orWhere('t.expires_at', '>', now))
    .first('t.id as tokenId', 't.token_hash as tokenHash', 'a.id as agentId', 'a.pod_id as podId', 'a.name as agentName');
}

const LAST_USED_RESOLUTION = "interval '1 minute'";

/** Records a use of the token: a hint for humans, so one write a minute per token is plenty. */
export async function markRuntimeTokenUsed(db: Queryable, tokenId: string): Promise<void> {
  await db('runtime_tokens')
    .where('id', tokenId)
    .andWhere((q) => q.whereNull('last_used_at').orWhereRaw(`last_used_at < now() - ${LAST_USED_RESOLUTION}`))
    .update({ last_used_at: db.fn.now() });
}

export function listRuntimeTokens(db: Queryable, agentId: string): Promise<RuntimeTokenRow[]> {
  return db<RuntimeTokenRow>('runtime_tokens').where({ agent_id: agentId }).orderBy('id', 'desc');
}

export async function insertRuntimeToken(
  db: Queryable,
  token: Omit<RuntimeTokenRow, 'created_at' | 'last_used_at'>,
): Promise<RuntimeTokenRow> {
  const rows = await db<RuntimeTokenRow>('runtime_tokens').insert(token).returning('*');
  return rows[0] as RuntimeTokenRow;
}

export async function deleteRuntimeToken(db: Queryable, agentId: string, tokenId: string): Promise<boolean> {
  return (await db('runtime_tokens').where({ id: tokenId, agent_id: agentId }).delete()) > 0;
}

export async function updateAgentRecord(
  trx: Knex.Transaction,
  agentId: string,
  changes: Partial<Pick<AgentRow, 'display_name' | 'description'>>,
): Promise<AgentRow> {
  const rows = await trx<AgentRow>('agents').where({ id: agentId }).update(changes).returning('*');
  return rows[0] as AgentRow;
}

/** Locks the agent row for a read-decide-write in one transaction (concurrent start/stop/patch). */
export function lockAgent(trx: Knex.Transaction, agentId: string): Promise<AgentRow | undefined> {
  return trx<AgentRow>('agents').where({ id: agentId }).forUpdate().first();
}

/**
 * Sets the desired state. Running means `starting` until the agent next polls; stopped is
 * `stopped` at once, since that is what the broker and attenuation enforce from then on.
 */
export async function setDesiredState(trx: Knex.Transaction, agentId: string, desired: AgentRow['desired_state']): Promise<AgentRow> {
  const rows = await trx<AgentRow>('agents')
    .where({ id: agentId })
    .update({
      desired_state: desired,
      runtime_state: desired === 'running' ? 'starting' : 'stopped',
      runtime_changed_at: trx.fn.now() as unknown as Date,
    })
    .returning('*');
  return rows[0] as AgentRow;
}

/**
 * A poll is the agent showing up: record it, and a `starting` runtime becomes `running`. An agent
 * that polls in a tight loop writes its row at most once a second (lastPolledAt is a hint for
 * humans), but the move to `running` is never delayed.
 */
export async function recordPoll(db: Queryable, agentId: string): Promise<void> {
  await db.raw(
    `update agents
        set last_polled_at = now(),
            runtime_state = case when desired_state = 'running' then 'running' else runtime_state end,
            runtime_changed_at = case when desired_state = 'running' and runtime_state <> 'running'
                                      then now() else runtime_changed_at end
      where id = ?
        and (last_polled_at is null
             or last_polled_at < now() - interval '1 second'
             or (desired_state = 'running' and runtime_state <> 'running'))`,
    [agentId],
  );
}
