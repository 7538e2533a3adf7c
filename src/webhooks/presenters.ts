import { iso } from '../kernel/schema';
import type { WebhookRow } from './repository';

/** A webhook as its pod's owners and admins read it: never its secret. */
export function presentWebhook(row: WebhookRow) {
  return { id: row.id, podId: row.pod_id, url: row.url, events: row.events, createdBy: row.created_by, createdAt: iso(row.created_at) };
}
