import type { Knex } from 'knex';
import type { Database } from '../db/database';
import { insertBroker, insertBrokerToken, revokeTokensOfBroker } from '../credentials/repository';
import { hashToken, mintToken } from '../credentials/tokens';
import { newId } from '../kernel/ids';

/** Registers a broker and returns its token: the only time the secret exists outside a hash. */
export async function registerBroker(db: Database, name: string): Promise<{ id: string; token: string }> {
  const id = newId('broker');
  const token = mintToken('bkt');
  await db.transaction(async (trx) => {
    await insertBroker(trx, { id, name });
    await insertBrokerToken(trx, { id: newId('brokerToken'), broker_id: id, token_hash: hashToken(token) });
  });
  return { id, token };
}

/** Revokes every token of a broker (a leaked token); the next check with it is a 401. */
export async function revokeBrokerTokens(db: Database | Knex.Transaction, brokerId: string): Promise<number> {
  return revokeTokensOfBroker(db, brokerId);
}
