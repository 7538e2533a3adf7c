import type { Knex } from 'knex';
import type { KeyRing } from '../credentials/sealed-box';
import type { Database } from '../db/database';
import type { Clock } from '../kernel/clock';
import type { HumanPrincipal } from '../kernel/principals';
import type { PolicyEngine } from '../policy/engine';
import type { PodActionFacts } from '../pods/access';

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
  /** What webhooks ask of pods/: a port, filled in composition.ts (src/domain-ports.ts). */
  pods: WebhooksPodPorts;
}

export type WebhookAction = 'webhooks.create' | 'webhooks.list' | 'webhooks.read' | 'webhooks.delete';

export interface WebhooksPodPorts {
  /**
   * pods/access's answer on a webhook action in a pod, enforced (a pod the caller is not in is a
   * 404); with the pod's webhooks as facts and in the caller's transaction on create.
   */
  authorize(caller: HumanPrincipal, podId: string, action: WebhookAction, facts?: PodActionFacts, trx?: Knex.Transaction): Promise<unknown>;
}
