import type { Knex } from 'knex';
import type { Clock } from '../kernel/clock';
import type { Database } from '../db/database';
import type { NewEvent } from '../events/outbox';
import type { EventWaker } from '../events/waker';
import type { OutboxFeed } from '../kernel/outbox';
import type { GrantsService } from '../grants/service';
import type { PolicyEngine } from '../policy/engine';

export type { GrantsService };

/** What the installed agent's surface uses, and nothing more. */
export interface RuntimeDeps {
  db: Database;
  policy: PolicyEngine;
  clock: Clock;
  /** The process's one LISTEN connection that wakes long polls. */
  eventWaker: EventWaker;
  /** What other domains' outboxes hold for agents (approvals): made into events before a poll looks. */
  agentMessages: OutboxFeed<NewEvent, Knex.Transaction>;
  /** EVENT_VISIBILITY_TIMEOUT_MS: how long a polled, unacknowledged event stays leased. */
  visibilityMs: number;
  /** The pod context lists the grants the agent can use, as the grants domain reads them. */
  grants: Pick<GrantsService, 'listOfPod'>;
}
