import type { Knex } from 'knex';
import type { Database } from '../db/database';

type Queryable = Database | Knex.Transaction;

/** One stored oidc-provider object: its JSON payload and the fields it is looked up by. */
export interface StateRow {
  model: string;
  id: string;
  payload: Record<string, unknown>;
  grant_id: string | null;
  uid: string | null;
  user_code: string | null;
  expires_at: Date | null;
  consumed_at: Date | null;
}

export async function upsertState(db: Queryable, row: Omit<StateRow, 'consumed_at'>): Promise<void> {
  await db('oauth_state')
    .insert({ ...row, payload: JSON.stringify(row.payload) })
    .onConflict(['model', 'id'])
    .merge(['payload', 'grant_id', 'uid', 'user_code', 'expires_at']);
}

/** A stored object unless it has expired (an expired one is as good as gone). */
export function findState(db: Queryable, model: string, where: { id: string } | { uid: string } | { user_code: string }, now: Date) {
  return db<StateRow>('oauth_state')
    .where({ model, ...where })
    .andWhere((q) => q.whereNull('expires_at').orWhere('expires_at', '>', now))
    .first();
}

/** Marks an object consumed once: a second consumption of the same code or refresh token changes nothing. */
export async function consumeState(db: Queryable, model: string, id: string, now: Date): Promise<void> {
  await db('oauth_state').where({ model, id }).whereNull('consumed_at').update({ consumed_at: now });
}

export async function deleteState(db: Queryable, model: string, id: string): Promise<void> {
  await db('oauth_state').where({ model, id }).delete();
}

/** Everything issued under one grant (a revoked family of refresh and access tokens). */
export async function deleteStateOfGrant(db: Queryable, grantId: string): Promise<void> {
  await db('oauth_state').where({ grant_id: grantId }).delete();
}

/** Expired objects, a bounded batch at a time. */
export async function deleteExpiredState(db: Queryable, now: Date, limit: number): Promise<number> {
  return db('oauth_state')
    .whereIn(['model', 'id'], db('oauth_state').select('model', 'id').where('expires_at', '<', now).limit(limit))
    .delete();
}

export interface SigningKeyRow {
  kid: string;
  sealed_jwk: string;
  created_at: Date;
}

/** Newest first: the first one signs. */
export function listSigningKeys(db: Queryable): Promise<SigningKeyRow[]> {
  return db<SigningKeyRow>('oauth_signing_keys').orderBy('created_at', 'desc').orderBy('kid', 'desc');
}

export async function insertSigningKey(db: Queryable, row: Omit<SigningKeyRow, 'created_at'> & { created_at: Date }): Promise<void> {
  await db('oauth_signing_keys').insert(row);
}

export async function deleteSigningKeys(db: Queryable, kids: readonly string[]): Promise<void> {
  if (kids.length > 0) await db('oauth_signing_keys').whereIn('kid', kids).delete();
}

/** Serializes key rotation across replicas starting at once (a transaction-scoped advisory lock). */
export async function lockSigningKeys(trx: Knex.Transaction): Promise<void> {
  await trx.raw(`select pg_advisory_xact_lock(hashtext('oauth_signing_keys'))`);
}

export interface ResourceRow {
  resource: string;
  broker_id: string;
  created_at: Date;
}

export function findResource(db: Queryable, resource: string): Promise<ResourceRow | undefined> {
  return db<ResourceRow>('oauth_resources').where({ resource }).first();
}

/** Idempotent: registering the same resource for the same broker again changes nothing. */
export async function insertResource(db: Queryable, resource: string, brokerId: string): Promise<ResourceRow | undefined> {
  await db('oauth_resources').insert({ resource, broker_id: brokerId }).onConflict('resource').ignore();
  return findResource(db, resource);
}

export function brokerExists(db: Queryable, brokerId: string): Promise<boolean> {
  return db('brokers')
    .where({ id: brokerId })
    .first('id')
    .then((row) => row !== undefined);
}

/** The agent and grant an access token stands for: the child grant a consent created. */
export function consentedGrant(db: Queryable, grantId: string) {
  return db<{ id: string; created_by: string; oauth_client_id: string | null }>('grants')
    .where({ id: grantId })
    .whereNotNull('oauth_client_id')
    .whereNull('revoked_at')
    .first('id', 'created_by', 'oauth_client_id');
}

/** Records on a child grant the OAuth client it was made for, and who consented. */
export async function markGrantForClient(
  trx: Knex.Transaction,
  grantId: string,
  client: { clientId: string; name: string; consentedBy: string },
): Promise<void> {
  await trx('grants')
    .where({ id: grantId })
    .update({ oauth_client_id: client.clientId, oauth_client_name: client.name, oauth_consented_by: client.consentedBy });
}

/** The pods where a person holds one of these roles. */
export function podsWhereRole(db: Queryable, userId: string, roles: readonly string[]) {
  return db('pod_members as m')
    .join('pods as p', 'p.id', 'm.pod_id')
    .where({ 'm.member_id': userId })
    .whereIn('m.role', roles)
    .orderBy('p.name')
    .limit(100)
    .select<Array<{ id: string; name: string }>>('p.id', 'p.name');
}

/** The agents installed in these pods. */
export function agentsOfPods(db: Queryable, podIds: readonly string[]) {
  return db('agents')
    .whereIn('pod_id', podIds)
    .orderBy('name')
    .limit(500)
    .select<Array<{ id: string; name: string; pod_id: string }>>('id', 'name', 'pod_id');
}

/** Of these grants, the ones of a broker's connections (the gateway a token will be for). */
export async function grantsOfBroker(db: Queryable, grantIds: readonly string[], brokerId: string): Promise<Set<string>> {
  if (grantIds.length === 0) return new Set();
  const rows = await db('grants').whereIn('id', grantIds).where({ broker_id: brokerId }).select<Array<{ id: string }>>('id');
  return new Set(rows.map((row) => row.id));
}

export function agentWithId(db: Queryable, agentId: string) {
  return db('agents').where({ id: agentId }).first<{ id: string; name: string; pod_id: string } | undefined>('id', 'name', 'pod_id');
}
