import { iso } from '../kernel/schema';
import type { EventRow } from './delivery';

export function presentEvent(event: EventRow) {
  return {
    id: event.id,
    type: event.type,
    podId: event.pod_id,
    occurredAt: iso(event.occurred_at),
    deliveryCount: event.delivery_count,
    data: event.data,
  };
}
