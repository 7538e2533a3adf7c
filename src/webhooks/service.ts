import { decodeCursor, encodeCursor } from '../kernel/cursor';
import { ApiError } from '../kernel/errors';
import { newId } from '../kernel/ids';
import type { HumanPrincipal } from '../kernel/principals';
import type { WebhookAction, WebhooksDeps } from './deps';
import { presentWebhook } from './presenters';
import {
  countWebhooks,
  deleteWebhook,
  findWebhook,
  insertWebhook,
  listWebhooks,
  lockPodWebhooks,
  type WebhookEventType,
} from './repository';
import { mintSecret, sealSecret } from './secrets';
import { checkTargetHost, parseTargetUrl } from './target-url';

/**
 * A pod's approval webhooks. Who may manage (and read) them is pods/access's call (owners and
 * admins; anyone outside the pod gets 404), and so is how many a pod may have; the target is
 * judged before it is kept.
 */
export function createWebhooksService(deps: WebhooksDeps) {
  const authorize = (principal: HumanPrincipal, podId: string, action: WebhookAction) => deps.pods.authorize(principal, podId, action);

  async function create(principal: HumanPrincipal, podId: string, body: { url: string; events: WebhookEventType[] }) {
    await authorize(principal, podId, 'webhooks.create');
    const url = parseTargetUrl(body.url);
    await checkTargetHost(url, deps.allowPrivate);
    const id = newId('webhook');
    const secret = mintSecret();
    const row = {
      id,
      pod_id: podId,
      url: url.href,
      events: [...body.events].sort(),
      ...sealSecret(deps.keys, id, secret),
      created_by: principal.userId,
      created_at: new Date(deps.clock.now()),
    };
    // The cap is judged and the row kept under one lock of the pod's webhooks: concurrent
    // creations cannot both take the last place.
    await deps.db.transaction(async (trx) => {
      await lockPodWebhooks(trx, podId);
      const webhooks = { count: await countWebhooks(trx, podId), max: deps.maxPerPod };
      await deps.pods.authorize(principal, podId, 'webhooks.create', { webhooks }, trx);
      await insertWebhook(trx, row);
    });
    return { ...presentWebhook(row), secret };
  }

  async function list(principal: HumanPrincipal, podId: string, query: { limit: number; cursor?: string }) {
    await authorize(principal, podId, 'webhooks.list');
    const rows = await listWebhooks(deps.db, podId, query.limit + 1, decodeCursor(query.cursor) ?? undefined);
    const page = rows.slice(0, query.limit);
    const last = page.at(-1);
    return {
      items: page.map(presentWebhook),
      nextCursor: rows.length > query.limit && last ? encodeCursor(last.created_at, last.id) : null,
    };
  }

  async function get(principal: HumanPrincipal, podId: string, id: string) {
    await authorize(principal, podId, 'webhooks.read');
    const row = await findWebhook(deps.db, podId, id);
    if (!row) throw new ApiError('not_found');
    return presentWebhook(row);
  }

  async function remove(principal: HumanPrincipal, podId: string, id: string) {
    await authorize(principal, podId, 'webhooks.delete');
    if (!(await deleteWebhook(deps.db, podId, id))) throw new ApiError('not_found');
  }

  return { create, list, get, remove };
}

export type WebhooksService = ReturnType<typeof createWebhooksService>;
