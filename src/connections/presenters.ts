import { iso } from '../kernel/schema';
import type { ConnectionRow, ConnectionTool } from './repository';

/** A connection as the API gives it: with its tools, never anything of its app's key. */
export function present(row: ConnectionRow, tools: ConnectionTool[]) {
  return {
    id: row.id,
    kind: row.kind,
    status: row.status,
    ownerId: row.owner_id,
    brokerId: row.broker_id,
    installationId: row.installation_id,
    externalInstallationId: row.external_installation_id,
    app: row.app,
    tools,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}
