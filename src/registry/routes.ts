import { credentials } from '../http/auth';
import { defineRoute, type Route } from '../http/route';
import { iso, page } from '../http/schema';
import { presentAgent, presentRuntime, presentRuntimeToken } from './presenters';
import { readAgent, readRuntime, startRuntime, stopRuntime, updateAgent } from './runtime';
import {
  AgentParams,
  AgentSchema,
  RuntimeSchema,
  UpdateAgentBody,
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
      auth: credentials('human'),
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
      auth: credentials('human'),
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
      auth: credentials('human'),
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
      auth: credentials('human'),
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
      auth: credentials('human'),
      params: TokenParams,
      success: { status: 204, description: 'Deleted' },
      errors: ['not_pod_admin'],
    },
    async ({ deps, principal, params }) => {
      await removeToken(deps, principal, params.podId, params.name, params.tokenId);
      return { status: 204 };
    },
  ),
  defineRoute(
    {
      method: 'get',
      path: `${base}/:name`,
      tag,
      summary: 'Read the agent record (pod members)',
      auth: credentials('human'),
      params: AgentParams,
      success: { status: 200, description: 'The agent record', schema: AgentSchema },
    },
    async ({ deps, principal, params }) => ({ body: presentAgent(await readAgent(deps, principal, params.podId, params.name)) }),
  ),
  defineRoute(
    {
      method: 'patch',
      path: `${base}/:name`,
      tag,
      summary: 'Update the display name or description; a real change sends `agent.updated` to the agent',
      auth: credentials('human'),
      params: AgentParams,
      body: UpdateAgentBody,
      success: { status: 200, description: 'The agent record', schema: AgentSchema },
      errors: ['not_pod_admin'],
    },
    async ({ deps, principal, params, body }) => ({
      body: presentAgent(await updateAgent(deps, principal, params.podId, params.name, body)),
    }),
  ),
  defineRoute(
    {
      method: 'get',
      path: `${base}/:name/runtime-status`,
      tag,
      summary: 'Read the runtime status: desired and observed state (pod members)',
      auth: credentials('human'),
      params: AgentParams,
      success: { status: 200, description: 'The runtime status', schema: RuntimeSchema },
    },
    async ({ deps, principal, params }) => ({ body: presentRuntime(await readRuntime(deps, principal, params.podId, params.name)) }),
  ),
  defineRoute(
    {
      method: 'post',
      path: `${base}/:name/runtime-start`,
      tag,
      summary: 'Start the runtime: desired running, `starting` until the agent next polls (idempotent)',
      description: 'Sends `runtime.start_requested` to the agent when the desired state changes; a repeat changes nothing and sends nothing.',
      auth: credentials('human'),
      params: AgentParams,
      success: { status: 200, description: 'The runtime status after the request', schema: RuntimeSchema },
      errors: ['not_pod_admin'],
    },
    async ({ deps, principal, params }) => ({ body: presentRuntime(await startRuntime(deps, principal, params.podId, params.name)) }),
  ),
  defineRoute(
    {
      method: 'post',
      path: `${base}/:name/runtime-stop`,
      tag,
      summary: 'Stop the runtime (kill switch): from the next request the broker denies the seat, on every replica (idempotent)',
      description:
        'Sends `runtime.stop_requested` to the agent when the desired state changes; a repeat changes nothing and sends nothing. ' +
        'The agent can still authenticate, poll and ack.',
      auth: credentials('human'),
      params: AgentParams,
      success: { status: 200, description: 'The runtime status after the request', schema: RuntimeSchema },
      errors: ['not_pod_admin'],
    },
    async ({ deps, principal, params }) => ({ body: presentRuntime(await stopRuntime(deps, principal, params.podId, params.name)) }),
  ),
];
