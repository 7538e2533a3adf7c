import { defineRoute, type CredentialAuthenticators, type Route } from '../kernel/route';
import { page } from '../kernel/schema';
import { ConnectionParams, ConnectionSchema, CreateConnectionBody, ListConnectionsQuery, UpdateConnectionBody } from './schemas';
import type { ConnectionsService } from './service';

const tag = 'Connections';

export function connectionRoutes(connections: ConnectionsService, auth: CredentialAuthenticators): Route[] {
  const human = auth.credentials('human');
  return [
    defineRoute(
      {
        method: 'post',
        path: '/api/connections',
        operationId: 'createConnection',
        tag,
        summary: 'Register a connector installation and its enabled tools; the caller owns it',
        description:
          'Only `kind: code_hosting_app` can back a root grant; other kinds are stored but refused by grant creation. With `app`, ' +
          'the connection mints per-call tokens through that GitHub App (GITHUB_APPS): 422 `unknown_app` for an app the ' +
          'deployment does not configure, 422 `installation_not_bound` unless the operator bound the installation to the caller.',
        auth: human,
        body: CreateConnectionBody,
        success: { status: 201, description: 'The connection', schema: ConnectionSchema },
        errors: ['unknown_app', 'installation_not_bound'],
      },
      async ({ principal, body }) => ({ body: await connections.create(principal, body) }),
    ),
    defineRoute(
      {
        method: 'get',
        path: '/api/connections',
        operationId: 'listConnections',
        tag,
        summary: 'List the connections the caller may read (those they own), with their tools',
        description: 'Newest first. Nobody sees a connection of someone else.',
        auth: human,
        query: ListConnectionsQuery,
        success: { status: 200, description: "The caller's connections, newest first", schema: page(ConnectionSchema) },
      },
      async ({ principal, query }) => ({ body: await connections.listOfCaller(principal, query) }),
    ),
    defineRoute(
      {
        method: 'get',
        path: '/api/connections/:connectionId',
        operationId: 'getConnection',
        tag,
        summary: 'Read a connection with its tools (its owner only)',
        auth: human,
        params: ConnectionParams,
        success: { status: 200, description: 'The connection', schema: ConnectionSchema },
      },
      async ({ principal, params }) => ({ body: await connections.read(principal, params.connectionId) }),
    ),
    defineRoute(
      {
        method: 'patch',
        path: '/api/connections/:connectionId',
        operationId: 'updateConnection',
        tag,
        summary: 'Connect or disconnect; a disconnected connection backs no new grant and its calls are denied',
        auth: human,
        params: ConnectionParams,
        body: UpdateConnectionBody,
        success: { status: 200, description: 'The connection', schema: ConnectionSchema },
        errors: ['invalidation_pending'],
      },
      async ({ principal, params, body }) => ({
        body: await connections.setStatus(principal, params.connectionId, body.status),
      }),
    ),
  ];
}
