import type { Knex } from 'knex';
import { notifyAtCommit } from '../events/outbox';
import { WEBHOOKS_WAKE_KEY } from './dispatcher';
import { enqueueWebhookMessage } from './enqueue';

/** The approval as a webhook carries it: the record without any of the call's arguments. */
export interface ApprovalRecord {
  id: string;
  [field: string]: unknown;
}

const waker = { notify: (trx: Knex.Transaction) => notifyAtCommit(trx, WEBHOOKS_WAKE_KEY) };

/**
 * What the approvals domain tells webhooks, in its own transaction: `approval.requested` and
 * `approval.decided`, each `{approval, consoleUrl}` where consoleUrl is the approval's page in the
 * web console (`<PUBLIC_URL>/console/approvals/<id>`).
 */
export class ApprovalWebhooks {
  private readonly base: string;

  constructor(publicUrl: string) {
    this.base = publicUrl.replace(/\/+$/, '');
  }

  consoleUrl(approvalId: string): string {
    return `${this.base}/console/approvals/${encodeURIComponent(approvalId)}`;
  }

  requested(trx: Knex.Transaction, podId: string, approval: ApprovalRecord, at: Date): Promise<void> {
    return this.send(trx, 'approval.requested', podId, approval, at);
  }

  decided(trx: Knex.Transaction, podId: string, approval: ApprovalRecord, at: Date): Promise<void> {
    return this.send(trx, 'approval.decided', podId, approval, at);
  }

  private send(trx: Knex.Transaction, type: 'approval.requested' | 'approval.decided', podId: string, approval: ApprovalRecord, at: Date) {
    // Never the arguments, whatever the caller handed over.
    const { args: _args, argsTooLarge: _large, argsUnreadable: _unreadable, ...record } = approval;
    return enqueueWebhookMessage(trx, { type, podId, at, data: { approval: record, consoleUrl: this.consoleUrl(approval.id) } }, waker);
  }
}
