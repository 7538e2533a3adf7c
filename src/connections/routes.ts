import { credentials } from '../http/auth';
import { defineRoute, type Route } from '../http/route';
import { ConnectionParams, ConnectionSchema, CreateConnectionBody, UpdateConnectionBody } from './schemas';
import { createConnection, readConnection, setConnectionStatus } from './service';

const tag = 'Connections';

export const connectionRoutes: Route[] = [
  defineRoute(
    {
      method: 'post',
      path: '/api/connections',
      tag,
      summary: 'Register a connector installation and its enabled tools; the caller owns it',
      description: 'Only `kind: code_hosting_app` can back a root grant; other kinds are stored but refused by grant creation.',
      auth: credentials('human'),
      body: CreateConnectionBody,
      success: { status: 201, description: 'The connection', schema: ConnectionSchema },
    },
    async ({ deps, principal, body }) => ({ body: await createConnection(deps, principal, body) }),
  ),
  defineRoute(
    {
      method: 'get',
      path: '/api/connections/:connectionId',
      tag,
      summary: 'Read a connection with its tools (its owner only)',
      auth: credentials('human'),
      params: ConnectionParams,
      success: { status: 200, description: 'The connection', schema: ConnectionSchema },
    },
    async ({ deps, principal, params }) => ({ body: await readConnection(deps, principal, params.connectionId) }),
  ),
  defineRoute(
    {
      method: 'patch',
      path: '/api/connections/:connectionId',
      tag,
      summary: 'Connect or disconnect; a disconnected connection backs no new grant and its calls are denied',
      auth: credentials('human'),
      params: ConnectionParams,
      body: UpdateConnectionBody,
      success: { status: 200, description: 'The connection', schema: ConnectionSchema },
    },
    async ({ deps, principal, params, body }) => ({
      body: await setConnectionStatus(deps, principal, params.connectionId, body.status),
    }),
  ),
];
