import type { Knex } from 'knex';
import type { Database } from '../db/database';
import type { ListPosition } from '../kernel/cursor';
import type { ToolResourcePointers } from '../kernel/decisions/catalogue';

type Queryable = Database | Knex.Transaction;

export interface ConnectionRow {
  id: string;
  owner_id: string;
  kind: string;
  broker_id: string;
  installation_id: string;
  external_installation_id: string;
  /** The GitHub App its calls mint tokens through; null for a connection that mints none. */
  app: string | null;
  status: 'connected' | 'disconnected';
  created_at: Date;
  updated_at: Date;
}

export interface ConnectionTool {
  name: string;
  access: 'read' | 'write';
  resource?: ToolResourcePointers;
  permissions?: Record<string, string>;
}

export function findConnection(db: Queryable, id: string): Promise<ConnectionRow | undefined> {
  return db<ConnectionRow>('connections').where({ id }).first();
}

interface ToolRow {
  name: string;
  access: 'read' | 'write';
  resource: ToolResourcePointers | null;
  permissions: Record<string, string> | null;
}

const toTool = ({ resource, permissions, ...tool }: ToolRow): ConnectionTool => ({
  ...tool,
  ...(resource ? { resource } : {}),
  ...(permissions ? { permissions } : {}),
});

export function listConnectionTools(db: Queryable, connectionId: string): Promise<ConnectionTool[]> {
  return db('connection_tools')
    .where({ connection_id: connectionId })
    .orderBy('name')
    .select('name', 'access', 'resource', 'permissions')
    .then((rows: ToolRow[]) => rows.map(toTool));
}

/** The tools of many connections in one query, by connection id, each list by name. */
export async function toolsOfConnections(db: Queryable, connectionIds: readonly string[]): Promise<Map<string, ConnectionTool[]>> {
  const tools = new Map<string, ConnectionTool[]>(connectionIds.map((id) => [id, []]));
  if (connectionIds.length === 0) return tools;
  const rows: Array<ToolRow & { connection_id: string }> = await db('connection_tools')
    .whereIn('connection_id', [...connectionIds])
    .orderBy([{ column: 'connection_id' }, { column: 'name' }])
    .select('connection_id', 'name', 'access', 'resource', 'permissions');
  for (const { connection_id: connectionId, ...tool } of rows) tools.get(connectionId)?.push(toTool(tool));
  return tools;
}

/** The connections a person owns, newest first, after a position: a page of `GET /api/connections`. */
export function connectionsOfOwnerAfter(
  db: Queryable,
  ownerId: string,
  after: ListPosition | null,
  size: number,
): Promise<ConnectionRow[]> {
  const query = db<ConnectionRow>('connections').where({ owner_id: ownerId });
  if (after) query.whereRaw('(created_at, id) < (?, ?)', [after.at, after.id]);
  return query
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(size);
}

/** Connections by id, each with its enabled tools by name (read or write); unknown ids are absent. */
export async function connectionsWithTools(
  db: Queryable,
  ids: readonly string[],
): Promise<Array<ConnectionRow & { tools: Record<string, ConnectionTool['access']> }>> {
  if (ids.length === 0) return [];
  const result = await db.raw<{ rows: Array<ConnectionRow & { tools: Record<string, ConnectionTool['access']> }> }>(
    `select c.*,
            coalesce((select json_object_agg(t.name, t.access order by t.name) from connection_tools t where t.connection_id = c.id),
                     '{}'::json) as tools
       from connections c
      where c.id = any(?::text[])`,
    [[...new Set(ids)]],
  );
  return result.rows;
}

export async function insertConnection(
  trx: Knex.Transaction,
  row: Omit<ConnectionRow, 'created_at' | 'updated_at'>,
  tools: ConnectionTool[],
): Promise<ConnectionRow> {
  const [inserted] = await trx<ConnectionRow>('connections').insert(row).returning('*');
  await trx('connection_tools').insert(
    tools.map((tool) => ({
      connection_id: row.id,
      name: tool.name,
      access: tool.access,
      resource: tool.resource ?? null,
      permissions: tool.permissions ?? null,
    })),
  );
  return inserted as ConnectionRow;
}

export async function updateConnectionStatus(db: Queryable, id: string, status: ConnectionRow['status'], at: Date): Promise<ConnectionRow> {
  const [row] = await db<ConnectionRow>('connections').where({ id }).update({ status, updated_at: at }).returning('*');
  return row as ConnectionRow;
}

export async function brokerExists(db: Queryable, brokerId: string): Promise<boolean> {
  return (await db('brokers').where({ id: brokerId }).first('id')) !== undefined;
}

/** What a token for one tool's calls is minted from; unknown connection or tool: undefined. */
export async function toolCredentialSource(
  db: Queryable,
  connectionId: string,
  tool: string,
): Promise<{ app: string | null; external_installation_id: string; permissions: Record<string, string> | null } | undefined> {
  return db('connections as c')
    .join('connection_tools as t', 't.connection_id', 'c.id')
    .where({ 'c.id': connectionId, 't.name': tool })
    .first('c.app', 'c.external_installation_id', 't.permissions');
}
