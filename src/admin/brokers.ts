import type { Knex } from 'knex';
import type { Database } from '../db/database';
import { hashToken, mintToken } from '../credentials/tokens';
import { newId } from '../kernel/ids';

/** Registers a broker and returns its token: the only time the secret exists outside a hash. */
export async function registerBroker(db: Database, name: string): Promise<{ id: string; token: string }> {
  const id = newId('broker');
  const token = mintToken('bkt');
  await db.transaction(async (trx) => {
    await trx('brokers').insert({ id, name });
    await trx('broker_tokens').insert({ id: newId('brokerToken'), broker_id: id, token_hash: hashToken(token) });
  });
  return { id, token };
}

/** Revokes every token of a broker (a leaked token); the next check with it is a 401. */
export async function revokeBrokerTokens(db: Database | Knex.Transaction, brokerId: string): Promise<number> {
  return db('broker_tokens').where({ broker_id: brokerId }).whereNull('revoked_at').update({ revoked_at: db.fn.now() });
}
