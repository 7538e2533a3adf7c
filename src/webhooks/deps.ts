import type { KeyRing } from '../credentials/sealed-box';
import type { Database } from '../db/database';
import type { Clock } from '../kernel/clock';
import type { PolicyEngine } from '../policy/engine';

/** What the webhooks domain uses, and nothing more. */
export interface WebhooksDeps {
  db: Database;
  policy: PolicyEngine;
  clock: Clock;
  /** Seals the signing secrets (the key ring of APPROVAL_ARGS_KEY). */
  keys: KeyRing;
  /** WEBHOOK_ALLOW_PRIVATE: targets on loopback, private and link-local addresses are allowed. */
  allowPrivate: boolean;
  /** WEBHOOK_MAX_PER_POD: the most webhooks one pod may have. */
  maxPerPod: number;
}
