import type { Knex } from 'knex';
import type { Database } from '../db/database';
import type { ChainLink, ConnectionFact, GrantFact, GrantFacts } from '../kernel/decisions/catalogue';
import type { GrantsLookups } from './deps';
import { brokerIdOf, loadChain, loadChains, type GrantRow } from './repository';

export type { ConnectionFact, GrantFact, GrantFacts } from '../kernel/decisions/catalogue';

type Queryable = Database | Knex.Transaction;

/** A grant as its decisions are asked about it: its row, its chain's facts and its connection's. */
export interface LoadedGrant {
  grant: GrantRow;
  /** The grant first, its root last. */
  chain: GrantFact[];
  connection: ConnectionFact;
}

/**
 * The builders of the facts the grant and broker decisions share (kernel/decisions/facts.ts):
 * one each, whatever query loaded the row.
 */
export function toGrantFact(row: GrantRow): GrantFact {
  return {
    id: row.id,
    target: { kind: row.target_kind, id: row.target_id, pod_id: row.target_pod_id },
    audience_mode: row.audience_mode,
    audience: row.audience,
    tools: row.tools,
    write_mode: row.write_mode,
    budget: { calls: row.budget_calls, window_ms: Number(row.budget_window_ms) },
    expires_at_ms: new Date(row.expires_at).getTime(),
    revoked: row.revoked_at !== null,
    ...(row.resources ? { resources: row.resources } : {}),
  };
}

/** A grant with what places it in its tree: a link of the broker check's chain. */
export function toChainLink(row: GrantRow): ChainLink {
  return {
    ...toGrantFact(row),
    parent_id: row.parent_id,
    root_id: row.root_id,
    broker_id: row.broker_id,
    connection_id: row.connection_id,
  };
}

/** `input.grant` of the grant decisions: the chain and connection with the current members. */
export function policyFacts(facts: Pick<LoadedGrant, 'chain' | 'connection'>, members: string[]): GrantFacts {
  return { chain: facts.chain, members, connection: facts.connection };
}

/**
 * Loads several grants with their chains (grants/repository.ts's one chain query) and their
 * connections (with their enabled tools). Unknown ids are simply absent from the map.
 */
export async function loadGrantFactsMany(
  lookups: Pick<GrantsLookups, 'connectionFacts'>,
  db: Queryable,
  grantIds: readonly string[],
): Promise<Map<string, LoadedGrant>> {
  const chains = await loadChains(db, grantIds);
  const connections = await lookups.connectionFacts(
    db,
    [...chains.values()].map((chain) => chain[0]!.connection_id),
  );
  const found = new Map<string, LoadedGrant>();
  for (const [grantId, chain] of chains) {
    const grant = chain[0]!;
    const connection = connections.get(grant.connection_id);
    if (connection) found.set(grantId, { grant, chain: chain.map(toGrantFact), connection });
  }
  return found;
}

/** The chain of one grant (the grant first, the root last) with its connection. */
export async function loadGrantFacts(
  lookups: Pick<GrantsLookups, 'connectionFacts'>,
  db: Queryable,
  grantId: string,
): Promise<LoadedGrant | undefined> {
  return (await loadGrantFactsMany(lookups, db, [grantId])).get(grantId);
}

/**
 * One grant's facts and the members of the pod it targets, as a read decision takes them: the
 * connection and the members read at once, once the chain names them (one round trip less than
 * one after the other). No such grant: no facts, no members.
 */
export async function loadGrantFactsWithMembers(
  lookups: Pick<GrantsLookups, 'connectionFacts' | 'memberIds'>,
  db: Queryable,
  grantId: string,
): Promise<{ facts: LoadedGrant | undefined; members: string[] }> {
  const chain = (await loadChains(db, [grantId])).get(grantId);
  if (!chain) return { facts: undefined, members: [] };
  const grant = chain[0]!;
  const [connections, members] = await Promise.all([
    lookups.connectionFacts(db, [grant.connection_id]),
    lookups.memberIds(db, grant.target_pod_id),
  ]);
  const connection = connections.get(grant.connection_id);
  if (!connection) return { facts: undefined, members: [] };
  return { facts: { grant, chain: chain.map(toGrantFact), connection }, members };
}

/** The chain of one grant as the broker check reads it, the grant first; empty when there is no such grant. */
export async function loadChainLinks(db: Queryable, grantId: string): Promise<ChainLink[]> {
  return (await loadChain(db, grantId)).map(toChainLink);
}

/** The broker a grant's calls go through; undefined when there is no such grant. */
export function brokerOfGrant(db: Queryable, grantId: string): Promise<string | undefined> {
  return brokerIdOf(db, grantId);
}
