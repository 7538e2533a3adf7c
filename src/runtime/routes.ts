import { defineRoute, type CredentialAuthenticators, type Route } from '../kernel/route';
import { presentMember, presentPod } from '../pods/presenters';
import { presentAgent, presentRuntime } from '../registry/presenters';
import { iso } from '../kernel/schema';
import { presentEvent } from '../events/presenters';
import type { RuntimeService } from './service';
import { EventParams, EventsPage, EventsQuery, InstallationsPage, PodContextSchema, RuntimePodParams, RuntimePodsPage } from './schemas';

const tag = 'Agent runtime';

export function runtimeRoutes(runtime: RuntimeService, auth: CredentialAuthenticators): Route[] {
  const agent = auth.credentials('agent');
  return [
    defineRoute(
      {
        method: 'get',
        path: '/api/agents/runtime/installations',
        operationId: 'listInstallations',
        tag,
        summary: "The calling agent's installation (one: a runtime token authenticates one seat)",
        auth: agent,
        success: { status: 200, description: 'Installations', schema: InstallationsPage },
      },
      async ({ principal }) => {
        const agents = await runtime.installations(principal);
        const items = agents.map((a) => ({
          podId: a.pod_id,
          name: a.name,
          agentId: a.id,
          installedAt: iso(a.installed_at),
          runtime: presentRuntime(a),
        }));
        return { body: { items, nextCursor: null } };
      },
    ),
    defineRoute(
      {
        method: 'get',
        path: '/api/agents/runtime/pods',
        operationId: 'listRuntimePods',
        tag,
        summary: 'The pods the calling agent is installed in',
        auth: agent,
        success: { status: 200, description: 'Pods', schema: RuntimePodsPage },
      },
      async ({ principal }) => {
        const pods = await runtime.pods(principal);
        return { body: { items: pods.map((p) => ({ id: p.id, name: p.name })), nextCursor: null } };
      },
    ),
    defineRoute(
      {
        method: 'get',
        path: '/api/agents/runtime/pods/:podId/context',
        operationId: 'getPodContext',
        tag,
        summary: 'The context of a pod the agent is installed in: pod, agent, members, usable grants',
        auth: agent,
        params: RuntimePodParams,
        success: { status: 200, description: 'The pod context', schema: PodContextSchema },
      },
      async ({ principal, params }) => {
        const context = await runtime.context(principal, params.podId);
        return {
          body: {
            pod: presentPod(context.pod),
            agent: presentAgent(context.agent),
            members: context.members.map(presentMember),
            grants: context.grants,
          },
        };
      },
    ),
    defineRoute(
      {
        method: 'get',
        path: '/api/agents/runtime/events',
        operationId: 'pollEvents',
        tag,
        summary: 'Poll pending events, oldest first; what comes back is leased, not removed',
        description:
          'At-least-once delivery. Returned events are leased for the visibility timeout (EVENT_VISIBILITY_TIMEOUT_MS, ' +
          'default 30 s); one not acked by then is delivered again with `deliveryCount` + 1. Concurrent polls of one agent ' +
          'never get the same event under a live lease. `waitMs` long-polls until an event arrives. A poll also marks the ' +
          'runtime `running` when it was `starting`. A stopped agent can still poll. `nextCursor` is always null: polling ' +
          'again is how to get more.',
        auth: agent,
        query: EventsQuery,
        success: { status: 200, description: 'Leased events, oldest first', schema: EventsPage },
      },
      async ({ principal, query, signal }) => {
        const events = await runtime.poll(principal, { limit: query.limit, waitMs: query.waitMs, signal });
        return { body: { items: events.map(presentEvent), nextCursor: null }, headers: { 'Cache-Control': 'no-store' } };
      },
    ),
    defineRoute(
      {
        method: 'post',
        path: '/api/agents/runtime/events/:eventId/ack',
        operationId: 'ackEvent',
        tag,
        summary: 'Acknowledge an event after persisting its result (idempotent)',
        description: 'Acking again is a 204. An event of another agent, or one deleted by retention, is a 404.',
        auth: agent,
        params: EventParams,
        success: { status: 204, description: 'Acknowledged' },
      },
      async ({ principal, params }) => {
        await runtime.ack(principal, params.eventId);
        return { status: 204 };
      },
    ),
  ];
}
