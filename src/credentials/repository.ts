import type { Knex } from 'knex';
import type { Database } from '../db/database';

type Queryable = Database | Knex.Transaction;

export interface BrokerTokenRow {
  id: string;
  broker_id: string;
  /** SHA-256 of the token; the token itself is never stored. */
  token_hash: string;
  created_at: Date;
  revoked_at: Date | null;
}

export async function insertBroker(trx: Queryable, broker: { id: string; name: string }): Promise<void> {
  await trx('brokers').insert(broker);
}

export async function insertBrokerToken(trx: Queryable, token: Pick<BrokerTokenRow, 'id' | 'broker_id' | 'token_hash'>): Promise<void> {
  await trx('broker_tokens').insert(token);
}

/** The unrevoked broker token with this hash, or undefined. */
export function findLiveBrokerToken(
  db: Queryable,
  tokenHash: string,
): Promise<Pick<BrokerTokenRow, 'broker_id' | 'token_hash'> | undefined> {
  return db<BrokerTokenRow>('broker_tokens').where({ token_hash: tokenHash }).whereNull('revoked_at').first('broker_id', 'token_hash');
}

/** Revokes every unrevoked token of the broker; answers how many. */
export function revokeTokensOfBroker(db: Queryable, brokerId: string): Promise<number> {
  return db('broker_tokens').where({ broker_id: brokerId }).whereNull('revoked_at').update({ revoked_at: db.fn.now() });
}
