import type { Knex } from 'knex';
import type { Database } from '../db/database';

type Queryable = Database | Knex.Transaction;

export type WebhookEventType = 'approval.requested' | 'approval.decided';

export interface WebhookRow {
  id: string;
  pod_id: string;
  url: string;
  events: WebhookEventType[];
  secret_sealed: Buffer;
  secret_key_id: string;
  created_by: string;
  created_at: Date;
}

export interface DeliveryRow {
  id: string;
  webhook_id: string;
  type: WebhookEventType;
  payload: Record<string, unknown>;
  created_at: Date;
  attempts: number;
  next_attempt_at: Date;
  leased_until: Date | null;
  delivered_at: Date | null;
  failed_at: Date | null;
  last_status: number | null;
  last_error: string | null;
}

export async function insertWebhook(db: Queryable, row: WebhookRow): Promise<void> {
  await db('webhooks').insert(row);
}

/** A pod's webhooks, newest first, after the cursor's (created_at, id) when given. */
export function listWebhooks(db: Queryable, podId: string, size: number, before?: { at: Date; id: string }): Promise<WebhookRow[]> {
  const query = db<WebhookRow>('webhooks').where({ pod_id: podId });
  if (before) query.whereRaw('(created_at, id) < (?, ?)', [before.at, before.id]);
  return query
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(size);
}

/** One webhook of this pod: another pod's id finds nothing. */
export function findWebhook(db: Queryable, podId: string, id: string): Promise<WebhookRow | undefined> {
  return db<WebhookRow>('webhooks').where({ pod_id: podId, id }).first();
}

/** Deletes it and (by cascade) every delivery still waiting for it; false when there was none. */
export async function deleteWebhook(db: Queryable, podId: string, id: string): Promise<boolean> {
  return (await db('webhooks').where({ pod_id: podId, id }).delete()) === 1;
}

/** The pod's webhooks that subscribe to this event type. */
export function subscribersOf(db: Queryable, podId: string, type: WebhookEventType): Promise<Array<Pick<WebhookRow, 'id'>>> {
  return db<WebhookRow>('webhooks').where({ pod_id: podId }).whereRaw('? = any(events)', [type]).select('id');
}

export async function insertDeliveries(
  db: Queryable,
  rows: ReadonlyArray<Pick<DeliveryRow, 'id' | 'webhook_id' | 'type' | 'payload' | 'created_at' | 'next_attempt_at'>>,
) {
  if (rows.length > 0) await db('webhook_deliveries').insert(rows);
}

/**
 * Leases up to `limit` deliveries that are due at `now` and not under a live lease, counting the
 * attempt, fairly across pods: a pod gets no more than `perPod` live leases in all (those other
 * replicas hold included), and every pod's oldest due delivery comes before any pod's next one.
 * SKIP LOCKED lets replicas split the due rows; the lease keeps them apart once the statement
 * commits, and a replica that dies mid-send leaves a row that is due again when its lease ends (at
 * least once).
 */
export async function leaseDue(
  db: Queryable,
  now: Date,
  options: { leaseMs: number; limit: number; perPod: number },
): Promise<DeliveryRow[]> {
  const result = await db.raw<{ rows: DeliveryRow[] }>(
    `with busy as (
       select w.pod_id, count(*) as leased
         from webhook_deliveries d join webhooks w on w.id = d.webhook_id
        where d.delivered_at is null and d.failed_at is null and d.leased_until > :now::timestamptz
        group by w.pod_id
     ), due as (
       select d.id, d.next_attempt_at, w.pod_id,
              row_number() over (partition by w.pod_id order by d.next_attempt_at, d.id) as place
         from webhook_deliveries d join webhooks w on w.id = d.webhook_id
        where d.delivered_at is null and d.failed_at is null and d.next_attempt_at <= :now::timestamptz
          and (d.leased_until is null or d.leased_until <= :now::timestamptz)
     ), fair as (
       select due.id from due left join busy on busy.pod_id = due.pod_id
        where due.place + coalesce(busy.leased, 0) <= :perPod
        order by due.place, due.next_attempt_at
        limit :limit
     )
     update webhook_deliveries
        set attempts = attempts + 1,
            leased_until = :now::timestamptz + :leaseMs::bigint * interval '1 millisecond'
      where id in (select id from webhook_deliveries where id in (select id from fair) for update skip locked)
      returning *`,
    { now, leaseMs: options.leaseMs, limit: options.limit, perPod: options.perPod },
  );
  return result.rows;
}

/** How many webhooks the pod has (the cap of WEBHOOK_MAX_PER_POD is judged on it). */
export async function countWebhooks(db: Queryable, podId: string): Promise<number> {
  const row = await db('webhooks').where({ pod_id: podId }).count<{ count: string }[]>({ count: '*' }).first();
  return Number(row?.count ?? 0);
}

/**
 * Serialises webhook creation in one pod until the transaction ends, so that two concurrent
 * creations cannot both find room for one more.
 */
export async function lockPodWebhooks(trx: Knex.Transaction, podId: string): Promise<void> {
  await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`webhooks:${podId}`]);
}

export function webhooksByIds(db: Queryable, ids: readonly string[]): Promise<WebhookRow[]> {
  return db<WebhookRow>('webhooks').whereIn('id', ids);
}

export async function markDelivered(db: Queryable, id: string, at: Date, status: number): Promise<void> {
  await db('webhook_deliveries').where({ id }).update({ delivered_at: at, leased_until: null, last_status: status, last_error: null });
}

/** After a failed attempt: again at `next`, or given up (`failed_at`) when `next` is undefined. */
export async function markAttemptFailed(
  db: Queryable,
  id: string,
  outcome: { at: Date; next?: Date; status: number | null; error: string },
): Promise<void> {
  await db('webhook_deliveries')
    .where({ id })
    .update({
      leased_until: null,
      last_status: outcome.status,
      last_error: outcome.error,
      ...(outcome.next ? { next_attempt_at: outcome.next } : { failed_at: outcome.at }),
    });
}

/** Deletes up to `batchSize` delivered or given-up deliveries older than `before`. */
export function deleteFinishedBefore(db: Queryable, before: Date, batchSize: number): Promise<number> {
  return db('webhook_deliveries')
    .whereIn(
      'id',
      db('webhook_deliveries')
        .select('id')
        .where((finished) => finished.where('delivered_at', '<', before).orWhere('failed_at', '<', before))
        .limit(batchSize),
    )
    .delete();
}

/** A delivery's state, for operators and tests. */
export function findDelivery(db: Queryable, id: string): Promise<DeliveryRow | undefined> {
  return db<DeliveryRow>('webhook_deliveries').where({ id }).first();
}
