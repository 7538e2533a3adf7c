import { cursor, idParam, listLimit, timestamp, z } from '../kernel/schema';

export const WEBHOOK_EVENT_TYPES = ['approval.requested', 'approval.decided'] as const;

export const CreateWebhookBody = z
  .strictObject({
    url: z
      .string()
      .min(1)
      .max(4096)
      .openapi({ description: 'An absolute http(s) URL: no user name, password or fragment; at most 2048 characters' }),
    events: z
      .array(z.enum(WEBHOOK_EVENT_TYPES))
      .min(1)
      .max(WEBHOOK_EVENT_TYPES.length)
      .refine((events) => new Set(events).size === events.length, 'an event type may not repeat'),
  })
  .openapi('WebhookCreate');

export const WebhookSchema = z
  .object({
    id: z.string(),
    podId: z.string(),
    url: z.string(),
    events: z.array(z.enum(WEBHOOK_EVENT_TYPES)),
    createdBy: z.string(),
    createdAt: timestamp,
  })
  .openapi('Webhook', { description: "A pod's subscription to approval events, delivered as Standard Webhooks." });

export const CreatedWebhookSchema = WebhookSchema.extend({
  secret: z.string().openapi({
    description: 'The signing secret (`whsec_…`), shown once: verify `webhook-signature` with it as Standard Webhooks describe',
  }),
}).openapi('CreatedWebhook');

export const PodWebhooksParams = z.strictObject({ podId: idParam('pod_01jd6x3c4vf8r9t2y5u7w0z1ab') });
export const WebhookParams = z.strictObject({
  podId: idParam('pod_01jd6x3c4vf8r9t2y5u7w0z1ab'),
  webhookId: idParam('whk_01jd6x3c4vf8r9t2y5u7w0z1ab'),
});

export const ListWebhooksQuery = z.strictObject({ limit: listLimit(), cursor });
