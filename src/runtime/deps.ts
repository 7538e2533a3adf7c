import type { Clock } from '../kernel/clock';
import type { Database } from '../db/database';
import type { EventWaker } from '../events/waker';
import type { GrantsService } from '../grants/service';
import type { PolicyEngine } from '../policy/engine';

/** What the installed agent's surface uses, and nothing more. */
export interface RuntimeDeps {
  db: Database;
  policy: PolicyEngine;
  clock: Clock;
  /** The process's one LISTEN connection that wakes long polls. */
  eventWaker: EventWaker;
  /** EVENT_VISIBILITY_TIMEOUT_MS: how long a polled, unacknowledged event stays leased. */
  visibilityMs: number;
  /** The pod context lists the grants the agent can use, as the grants domain reads them. */
  grants: Pick<GrantsService, 'listOfPod'>;
}
