import { defineRoute, type CredentialAuthenticators, type Route } from '../kernel/route';
import { iso, page } from '../kernel/schema';
import { presentAgent, presentRuntime, presentRuntimeToken } from './presenters';
import {
  AgentParams,
  AgentSchema,
  RuntimeSchema,
  UpdateAgentBody,
  CreatedRuntimeTokenSchema,
  CreateRuntimeTokenBody,
  InstallAgentBody,
  ListAgentsQuery,
  PodParams,
  RuntimeTokenSchema,
  TokenParams,
} from './schemas';
import type { RegistryService } from './service';

const tag = 'Agent registry';
const base = '/api/registry/pods/:podId/agents';

export function registryRoutes(registry: RegistryService, auth: CredentialAuthenticators): Route[] {
  const human = auth.credentials('human');
  return [
    defineRoute(
      {
        method: 'post',
        path: base,
        operationId: 'installAgent',
        tag,
        summary: 'Install an agent in a pod: creates its seat (`agt_…`), a pod member of kind agent',
        auth: human,
        params: PodParams,
        body: InstallAgentBody,
        success: { status: 201, description: 'The installed agent', schema: AgentSchema },
        errors: ['not_pod_admin', 'agent_exists'],
      },
      async ({ principal, params, body }) => ({
        body: presentAgent(await registry.install(principal, params.podId, body)),
      }),
    ),
    defineRoute(
      {
        method: 'get',
        path: base,
        operationId: 'listAgents',
        tag,
        summary: "List a pod's installed agents by name, with each runtime's state (pod members)",
        description: 'What `GET …/agents/:name` shows, for every agent of the pod; a non-member gets 404.',
        auth: human,
        params: PodParams,
        query: ListAgentsQuery,
        success: { status: 200, description: 'Agents, by name', schema: page(AgentSchema) },
      },
      async ({ principal, params, query }) => {
        const listed = await registry.list(principal, params.podId, query);
        return { body: { items: listed.items.map(presentAgent), nextCursor: listed.nextCursor } };
      },
    ),
    defineRoute(
      {
        method: 'delete',
        path: `${base}/:name`,
        operationId: 'uninstallAgent',
        tag,
        summary: 'Uninstall an agent: its tokens stop working and it leaves every audience',
        auth: human,
        params: AgentParams,
        success: { status: 204, description: 'Uninstalled' },
        errors: ['not_pod_admin', 'invalidation_pending'],
      },
      async ({ principal, params }) => {
        await registry.uninstall(principal, params.podId, params.name);
        return { status: 204 };
      },
    ),
    defineRoute(
      {
        method: 'get',
        path: `${base}/:name/runtime-tokens`,
        operationId: 'listRuntimeTokens',
        tag,
        summary: 'List the runtime tokens of an agent (never the secrets)',
        auth: human,
        params: AgentParams,
        success: { status: 200, description: 'Tokens, newest first', schema: page(RuntimeTokenSchema) },
      },
      async ({ principal, params }) => {
        const tokens = await registry.tokens(principal, params.podId, params.name);
        return { body: { items: tokens.map(presentRuntimeToken), nextCursor: null } };
      },
    ),
    defineRoute(
      {
        method: 'post',
        path: `${base}/:name/runtime-tokens`,
        operationId: 'createRuntimeToken',
        tag,
        summary: 'Create a runtime token; the secret is in this response and nowhere else, ever',
        auth: human,
        params: AgentParams,
        body: CreateRuntimeTokenBody,
        success: { status: 201, description: 'The token with its secret', schema: CreatedRuntimeTokenSchema },
        errors: ['not_pod_admin'],
      },
      async ({ principal, params, body }) => {
        const { row, token } = await registry.createToken(principal, params.podId, params.name, body);
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
        operationId: 'deleteRuntimeToken',
        tag,
        summary: 'Delete a runtime token: the very next request with it is a 401',
        auth: human,
        params: TokenParams,
        success: { status: 204, description: 'Deleted' },
        errors: ['not_pod_admin', 'invalidation_pending'],
      },
      async ({ principal, params }) => {
        await registry.removeToken(principal, params.podId, params.name, params.tokenId);
        return { status: 204 };
      },
    ),
    defineRoute(
      {
        method: 'get',
        path: `${base}/:name`,
        operationId: 'getAgent',
        tag,
        summary: 'Read the agent record (pod members)',
        auth: human,
        params: AgentParams,
        success: { status: 200, description: 'The agent record', schema: AgentSchema },
      },
      async ({ principal, params }) => ({ body: presentAgent(await registry.read(principal, params.podId, params.name)) }),
    ),
    defineRoute(
      {
        method: 'patch',
        path: `${base}/:name`,
        operationId: 'updateAgent',
        tag,
        summary: 'Update the display name or description; a real change sends `agent.updated` to the agent',
        auth: human,
        params: AgentParams,
        body: UpdateAgentBody,
        success: { status: 200, description: 'The agent record', schema: AgentSchema },
        errors: ['not_pod_admin'],
      },
      async ({ principal, params, body }) => ({
        body: presentAgent(await registry.update(principal, params.podId, params.name, body)),
      }),
    ),
    defineRoute(
      {
        method: 'get',
        path: `${base}/:name/runtime-status`,
        operationId: 'getRuntimeStatus',
        tag,
        summary: 'Read the runtime status: desired and observed state (pod members)',
        auth: human,
        params: AgentParams,
        success: { status: 200, description: 'The runtime status', schema: RuntimeSchema },
      },
      async ({ principal, params }) => ({ body: presentRuntime(await registry.runtime(principal, params.podId, params.name)) }),
    ),
    defineRoute(
      {
        method: 'post',
        path: `${base}/:name/runtime-start`,
        operationId: 'startRuntime',
        tag,
        summary: 'Start the runtime: desired running, `starting` until the agent next polls (idempotent)',
        description:
          'Sends `runtime.start_requested` to the agent when the desired state changes; a repeat changes nothing and sends nothing.',
        auth: human,
        params: AgentParams,
        success: { status: 200, description: 'The runtime status after the request', schema: RuntimeSchema },
        errors: ['not_pod_admin', 'invalidation_pending'],
      },
      async ({ principal, params }) => ({ body: presentRuntime(await registry.start(principal, params.podId, params.name)) }),
    ),
    defineRoute(
      {
        method: 'post',
        path: `${base}/:name/runtime-stop`,
        operationId: 'stopRuntime',
        tag,
        summary: 'Stop the runtime (kill switch): from the next request the broker denies the seat, on every replica (idempotent)',
        description:
          'Sends `runtime.stop_requested` to the agent when the desired state changes; a repeat changes nothing and sends nothing. ' +
          'The agent can still authenticate, poll and ack.',
        auth: human,
        params: AgentParams,
        success: { status: 200, description: 'The runtime status after the request', schema: RuntimeSchema },
        errors: ['not_pod_admin', 'invalidation_pending'],
      },
      async ({ principal, params }) => ({ body: presentRuntime(await registry.stop(principal, params.podId, params.name)) }),
    ),
  ];
}
