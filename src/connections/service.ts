import { decisions } from '../kernel/decisions/catalogue';
import type { CacheInvalidation } from '../cache/invalidation';
import type { Database } from '../db/database';
import type { PolicyEngine } from '../policy/engine';
import type { Clock } from '../kernel/clock';
import type { HumanPrincipal } from '../kernel/principals';
import { ApiError } from '../kernel/errors';
import { newId } from '../kernel/ids';
import { enforce } from '../policy/enforce';
import { listConnectionsOfCaller } from './list';
import { present } from './presenters';
import {
  brokerExists,
  findConnection,
  insertConnection,
  listConnectionTools,
  updateConnectionStatus,
  type ConnectionRow,
  type ConnectionTool,
} from './repository';

/** What the connections domain uses, and nothing more. */
export interface ConnectionsDeps {
  db: Database;
  policy: PolicyEngine;
  invalidation: CacheInvalidation;
  clock: Clock;
  /** The GitHub Apps of GITHUB_APPS, and who each installation is bound to. */
  apps: { has(name: string): boolean; bindingOf(app: string, externalInstallationId: string): Promise<{ owner_id: string } | undefined> };
}

/** Connector installations and their tools, visible to their owner alone. */
export function createConnectionsService(deps: ConnectionsDeps) {
  return {
    create: createConnection.bind(null, deps),
    read: readConnection.bind(null, deps),
    listOfCaller: listConnectionsOfCaller.bind(null, deps),
    setStatus: setConnectionStatus.bind(null, deps),
  };
}

export type ConnectionsService = ReturnType<typeof createConnectionsService>;

async function authorized(deps: ConnectionsDeps, caller: HumanPrincipal, id: string, action: 'connection.read' | 'connection.update') {
  const connection = await findConnection(deps.db, id);
  enforce(
    deps.policy.evaluate(decisions.connectionsAccess, {
      action,
      caller: { kind: caller.kind, id: caller.userId },
      connection: connection ? { owner_id: connection.owner_id } : undefined,
    }),
  );
  return connection as ConnectionRow;
}

export async function createConnection(
  deps: ConnectionsDeps,
  caller: HumanPrincipal,
  input: { kind: string; brokerId: string; externalInstallationId: string; app?: string; tools: ConnectionTool[] },
) {
  const binding = input.app === undefined ? undefined : await deps.apps.bindingOf(input.app, input.externalInstallationId);
  enforce(
    deps.policy.evaluate(decisions.connectionsAccess, {
      action: 'connection.create',
      caller: { kind: caller.kind, id: caller.userId },
      ...(input.app === undefined ? {} : { app: { name: input.app, configured: deps.apps.has(input.app) } }),
      ...(binding ? { binding } : {}),
    }),
  );
  if (!(await brokerExists(deps.db, input.brokerId))) {
    throw new ApiError('invalid_request', 'no broker has that id', { errors: [{ path: 'body.brokerId', message: 'unknown broker' }] });
  }
  const row = await deps.db.transaction((trx) =>
    insertConnection(
      trx,
      {
        id: newId('connection'),
        owner_id: caller.userId,
        kind: input.kind,
        broker_id: input.brokerId,
        installation_id: newId('installation'),
        external_installation_id: input.externalInstallationId,
        app: input.app ?? null,
        status: 'connected',
      },
      input.tools,
    ),
  );
  return present(row, await listConnectionTools(deps.db, row.id));
}

export async function readConnection(deps: ConnectionsDeps, caller: HumanPrincipal, id: string) {
  const row = await authorized(deps, caller, id, 'connection.read');
  return present(row, await listConnectionTools(deps.db, id));
}

/** Disconnecting stops new grants on it and makes the broker deny calls on its grants at once. */
export async function setConnectionStatus(deps: ConnectionsDeps, caller: HumanPrincipal, id: string, status: ConnectionRow['status']) {
  await authorized(deps, caller, id, 'connection.update');
  const row = await deps.invalidation.change(async (trx, touch) => {
    const updated = await updateConnectionStatus(trx, id, status, new Date(deps.clock.now()));
    await touch('connection', id);
    return updated;
  });
  return present(row, await listConnectionTools(deps.db, id));
}
