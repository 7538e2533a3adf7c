import type { Knex } from 'knex';
import type { Database } from '../db/database';
import { toConnectionFact } from '../kernel/decisions/catalogue';
import type { ConnectionFact } from '../kernel/decisions/catalogue';
import { connectionsWithTools, toolCredentialSource } from './repository';

type Queryable = Database | Knex.Transaction;

/**
 * What other domains read of connections (connections/repository.ts is this domain's own): a
 * connection as the grant and broker decisions see it (kernel/decisions/facts.ts).
 */

/** The facts of connections by id, each with its enabled tools; unknown ids are absent. */
export async function loadConnectionFacts(db: Queryable, ids: readonly string[]): Promise<Map<string, ConnectionFact>> {
  const rows = await connectionsWithTools(db, ids);
  return new Map(rows.map((row) => [row.id, toConnectionFact(row, row.tools)]));
}

/** A connection a root grant is made on: its fact, and the installation and broker its grants go to. */
export async function grantableConnection(
  db: Queryable,
  id: string,
): Promise<{ fact: ConnectionFact; installationId: string; brokerId: string } | undefined> {
  const [row] = await connectionsWithTools(db, [id]);
  return row && { fact: toConnectionFact(row, row.tools), installationId: row.installation_id, brokerId: row.broker_id };
}

/**
 * Where a token for one tool's calls comes from: the connection's app and installation, and the
 * permissions the tool declares. None of it changes after the connection is made.
 */
export async function credentialSourceOf(
  db: Queryable,
  connectionId: string,
  tool: string,
): Promise<{ app: string; installationId: string; permissions: Record<string, string> | null } | undefined> {
  const row = await toolCredentialSource(db, connectionId, tool);
  return row?.app ? { app: row.app, installationId: row.external_installation_id, permissions: row.permissions } : undefined;
}
