import { defineRoute, type CredentialAuthenticators, type Route } from '../kernel/route';
import { page } from '../kernel/schema';
import { CreateWebhookBody, CreatedWebhookSchema, ListWebhooksQuery, PodWebhooksParams, WebhookParams, WebhookSchema } from './schemas';
import type { WebhooksService } from './service';

const tag = 'Webhooks';
const WHO = "The pod's owners and admins (a member: 403 `not_pod_admin`; anyone else: 404).";

export function webhookRoutes(webhooks: WebhooksService, auth: CredentialAuthenticators): Route[] {
  const human = auth.credentials('human');
  return [
    defineRoute(
      {
        method: 'post',
        path: '/api/pods/:podId/webhooks',
        operationId: 'createWebhook',
        tag,
        summary: 'Send approval events of the pod to a URL, signed as Standard Webhooks',
        description:
          `${WHO} The URL must be http(s), without user name, password or fragment (400 \`webhook_url_invalid\`), and its host must ` +
          'resolve to public addresses only unless the service sets WEBHOOK_ALLOW_PRIVATE (400 `webhook_target_not_allowed`). ' +
          'A pod has at most WEBHOOK_MAX_PER_POD webhooks (10 by default; 422 `too_many_webhooks` past it). ' +
          'The answer carries the signing secret, shown this once.',
        auth: human,
        params: PodWebhooksParams,
        body: CreateWebhookBody,
        success: { status: 201, description: 'The webhook, with its secret', schema: CreatedWebhookSchema },
        errors: ['not_pod_admin', 'webhook_url_invalid', 'webhook_target_not_allowed', 'too_many_webhooks'],
      },
      async ({ principal, params, body }) => ({ status: 201, body: await webhooks.create(principal, params.podId, body) }),
    ),
    defineRoute(
      {
        method: 'get',
        path: '/api/pods/:podId/webhooks',
        operationId: 'listWebhooks',
        tag,
        summary: "The pod's webhooks, newest first",
        description: WHO,
        auth: human,
        params: PodWebhooksParams,
        query: ListWebhooksQuery,
        success: { status: 200, description: 'A page of webhooks', schema: page(WebhookSchema) },
        errors: ['not_pod_admin'],
      },
      async ({ principal, params, query }) => ({ body: await webhooks.list(principal, params.podId, query) }),
    ),
    defineRoute(
      {
        method: 'get',
        path: '/api/pods/:podId/webhooks/:webhookId',
        operationId: 'getWebhook',
        tag,
        summary: 'One webhook (never its secret)',
        description: WHO,
        auth: human,
        params: WebhookParams,
        success: { status: 200, description: 'The webhook', schema: WebhookSchema },
        errors: ['not_pod_admin'],
      },
      async ({ principal, params }) => ({ body: await webhooks.get(principal, params.podId, params.webhookId) }),
    ),
    defineRoute(
      {
        method: 'delete',
        path: '/api/pods/:podId/webhooks/:webhookId',
        operationId: 'deleteWebhook',
        tag,
        summary: 'Stop sending to a webhook; what waits for it is dropped',
        description: WHO,
        auth: human,
        params: WebhookParams,
        success: { status: 204, description: 'Deleted' },
        errors: ['not_pod_admin'],
      },
      async ({ principal, params }) => {
        await webhooks.remove(principal, params.podId, params.webhookId);
        return { status: 204 };
      },
    ),
  ];
}
