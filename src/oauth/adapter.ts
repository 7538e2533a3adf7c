import type { Adapter, AdapterPayload } from 'oidc-provider';
import type { Database } from '../db/database';
import type { Clock } from '../kernel/clock';
import { inHostRealm } from './provider-module';
import { consumeState, deleteState, deleteStateOfGrant, findState, upsertState, type StateRow } from './repository';

/**
 * oidc-provider's storage in Postgres: one class per model name, every object a row of
 * `oauth_state`. Consumption is a column set once, so a code or refresh token presented twice is
 * seen as consumed by every replica (the library then refuses it and, for a refresh token, revokes
 * its whole grant).
 */
export function postgresAdapter(db: Database, clock: Clock): (name: string) => Adapter {
  // Registered clients, as every token request reads them. Registration management is off, so a
  // client registered dynamically never changes or goes away: one read is remembered for a minute
  // (bounded in entries). A client not found is never remembered.
  const clients = new Map<string, { payload: AdapterPayload; until: number }>();
  const rememberClient = (id: string, payload: AdapterPayload) => {
    clients.delete(id);
    if (clients.size >= MAX_REMEMBERED_CLIENTS) clients.delete(clients.keys().next().value!);
    clients.set(id, { payload, until: clock.now() + CLIENT_MEMORY_MS });
  };

  // A factory, not a class: oidc-provider tells classes with `instanceof Function`, which another realm's fails.
  class PostgresAdapter implements Adapter {
    constructor(private readonly name: string) {}

    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      if (this.name === 'Client') clients.delete(id);
      await upsertState(db, {
        model: this.name,
        id,
        payload: payload as Record<string, unknown>,
        grant_id: typeof payload.grantId === 'string' ? payload.grantId : null,
        uid: typeof payload.uid === 'string' ? payload.uid : null,
        user_code: typeof payload.userCode === 'string' ? payload.userCode : null,
        expires_at: expiresIn ? new Date(clock.now() + expiresIn * 1000) : null,
      });
    }

    async find(id: string): Promise<AdapterPayload | undefined> {
      if (this.name !== 'Client') return this.load({ id });
      const remembered = clients.get(id);
      // A copy each time: the library may add to what it is given.
      if (remembered && remembered.until > clock.now()) return inHostRealm({ ...remembered.payload });
      const payload = await this.load({ id });
      if (payload) rememberClient(id, payload);
      return payload;
    }

    findByUid(uid: string): Promise<AdapterPayload | undefined> {
      return this.load({ uid });
    }

    findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      return this.load({ user_code: userCode });
    }

    async consume(id: string): Promise<void> {
      await consumeState(db, this.name, id, new Date(clock.now()));
    }

    async destroy(id: string): Promise<void> {
      if (this.name === 'Client') clients.delete(id);
      await deleteState(db, this.name, id);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await deleteStateOfGrant(db, grantId);
    }

    private async load(where: { id: string } | { uid: string } | { user_code: string }): Promise<AdapterPayload | undefined> {
      const row: StateRow | undefined = await findState(db, this.name, where, new Date(clock.now()));
      if (!row) return undefined;
      return inHostRealm({ ...row.payload, ...(row.consumed_at ? { consumed: Math.floor(row.consumed_at.getTime() / 1000) } : {}) });
    }
  }
  return (name) => new PostgresAdapter(name);
}

const CLIENT_MEMORY_MS = 60_000;
const MAX_REMEMBERED_CLIENTS = 1_000;
