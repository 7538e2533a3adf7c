import { defineRoute, type Route } from '../http/route';
import { iso, page } from '../http/schema';
import { presentAgent, presentRuntimeToken } from './presenters';
import {
  AgentParams,
  AgentSchema,
  CreatedRuntimeTokenSchema,
  CreateRuntimeTokenBody,
  InstallAgentBody,
  PodParams,
  RuntimeTokenSchema,
  TokenParams,
} from './schemas';
import { createRuntimeToken, installAgent, listTokens, removeToken, uninstallAgent } from './service';

const tag = 'Agent registry';
const base = '/api/registry/pods/:podId/agents';

export const registryRoutes: Route[] = [
  defineRoute(
    {
      method: 'post',
      path: base,
      tag,
      summary: 'Install an agent in a pod: creates its seat (`agt_…`), a pod member of kind agent',
      auth: ['human'],
      params: PodParams,
      body: InstallAgentBody,
      success: { status: 201, description: 'The installed agent', schema: AgentSchema },
      errors: ['not_pod_admin', 'agent_exists'],
    },
    async ({ deps, principal, params, body }) => ({
      body: presentAgent(await installAgent(deps, principal, params.podId, body)),
    }),
  ),
  defineRoute(
    {
      method: 'delete',
      path: `${base}/:name`,
      tag,
      summary: 'Uninstall an agent: its tokens stop working and it leaves every audience',
      auth: ['human'],
      params: AgentParams,
      success: { status: 204, description: 'Uninstalled' },
      errors: ['not_pod_admin'],
    },
    async ({ deps, principal, params }) => {
      await uninstallAgent(deps, principal, params.podId, params.name);
      return { status: 204 };
    },
  ),
  defineRoute(
    {
      method: 'get',
      path: `${base}/:name/runtime-tokens`,
      tag,
      summary: 'List the runtime tokens of an agent (never the secrets)',
      auth: ['human'],
      params: AgentParams,
      success: { status: 200, description: 'Tokens, newest first', schema: page(RuntimeTokenSchema) },
    },
    async ({ deps, principal, params }) => {
      const tokens = await listTokens(deps, principal, params.podId, params.name);
      return { body: { items: tokens.map(presentRuntimeToken), nextCursor: null } };
    },
  ),
  defineRoute(
    {
      method: 'post',
      path: `${base}/:name/runtime-tokens`,
      tag,
      summary: 'Create a runtime token; the secret is in this response and nowhere else, ever',
      auth: ['human'],
      params: AgentParams,
      body: CreateRuntimeTokenBody,
      success: { status: 201, description: 'The token with its secret', schema: CreatedRuntimeTokenSchema },
      errors: ['not_pod_admin'],
    },
    async ({ deps, principal, params, body }) => {
      const { row, token } = await createRuntimeToken(deps, principal, params.podId, params.name, body);
      return {
        body: { id: row.id, name: row.name, token, createdAt: iso(row.created_at), expiresAt: iso(row.expires_at) },
        headers: { 'Cache-Control': 'no-store' },
      };
    },
  ),
  defineRoute(
    {
      method: 'delete',
      path: `${base}/:name/runtime-tokens/:tokenId`,
      tag,
      summary: 'Delete a runtime token: the very next request with it is a 401',
      auth: ['human'],
      params: TokenParams,
      success: { status: 204, description: 'Deleted' },
      errors: ['not_pod_admin'],
    },
    async ({ deps, principal, params }) => {
      await removeToken(deps, principal, params.podId, params.name, params.tokenId);
      return { status: 204 };
    },
  ),
];
