import type { Knex } from 'knex';
import type { Database } from '../db/database';
import { notifyAtCommit } from '../events/outbox';
import type { OutboxFeed } from '../kernel/outbox';
import { approvalsWakeKey } from './inbox-wait';
import { insertApprovalMessage, takeApprovalMessages, type ApprovalMessageRow, type MessageReader } from './repository';

/**
 * What the approvals tell others, through their outbox (approval_messages): `approval.requested`
 * and `approval.decided`, each written in the transaction that requests or decides the approval.
 * The webhooks of the approval's pod and the installed agent whose call it is read it later, each
 * in its own transaction: nothing of theirs runs inside an approval's (or a broker check's).
 */

/** The events waker's key a commit that wrote a message notifies. */
export const APPROVAL_MESSAGES_KEY = 'approval-messages';

/** The approval as a message carries it: the record without any of the call's arguments. */
export interface ApprovalRecord {
  id: string;
  grantId: string;
  callId: string;
  tool: string;
  state: string;
  expiresAt: string | null;
  principal: { kind: 'user' | 'agent'; id: string };
  [field: string]: unknown;
}

/** A message as a pod's webhooks send it: `{approval, consoleUrl}`. */
export interface WebhookMessage {
  type: 'approval.requested' | 'approval.decided';
  podId: string;
  at: Date;
  data: Record<string, unknown>;
}

/** A message as an installed agent's events carry it. */
export interface AgentMessage {
  type: 'approval.requested' | 'approval.decided';
  podId: string;
  agentIds: readonly string[];
  data: Record<string, unknown>;
}

/**
 * Writes the message of an approval requested or decided in `trx`, and wakes, at commit, the
 * deciders' inbox long polls, the readers of the outbox and the agent whose call it is.
 * `consoleUrl` is the approval's page in the web console.
 */
export async function tellOfApproval(
  trx: Knex.Transaction,
  message: { type: 'approval.requested' | 'approval.decided'; podId: string; at: Date; approval: ApprovalRecord; consoleUrl: string },
): Promise<void> {
  // Never the arguments, whatever the caller handed over.
  const { args: _args, argsTooLarge: _large, argsUnreadable: _unreadable, ...approval } = message.approval;
  const agentIds = approval.principal.kind === 'agent' ? [approval.principal.id] : [];
  await insertApprovalMessage(trx, {
    type: message.type,
    pod_id: message.podId,
    at: message.at,
    webhook_data: { approval, consoleUrl: message.consoleUrl },
    agent_ids: agentIds,
    agent_data: agentIds.length > 0 ? agentData(message.type, approval) : null,
  });
  if (message.type === 'approval.requested') await notifyAtCommit(trx, approvalsWakeKey(message.podId));
  await notifyAtCommit(trx, APPROVAL_MESSAGES_KEY);
  for (const agentId of agentIds) await notifyAtCommit(trx, agentId);
}

/** What the agent hears: which call, and what became of its approval. */
function agentData(type: WebhookMessage['type'], approval: Omit<ApprovalRecord, 'args'>): Record<string, unknown> {
  const call = { approvalId: approval.id, grantId: approval.grantId, callId: approval.callId };
  return type === 'approval.requested'
    ? { ...call, tool: approval.tool, expiresAt: approval.expiresAt }
    : { ...call, state: approval.state, tool: approval.tool };
}

const DRAIN_BATCH = 500;

/** The outbox as each of its readers reads it (composition.ts hands them over as ports). */
export function approvalMessageFeeds(db: Database): {
  webhooks: OutboxFeed<WebhookMessage, Knex.Transaction>;
  agents: OutboxFeed<AgentMessage, Knex.Transaction>;
} {
  const feed = <M>(reader: MessageReader, shape: (row: ApprovalMessageRow) => M | undefined): OutboxFeed<M, Knex.Transaction> => ({
    wakeKey: APPROVAL_MESSAGES_KEY,
    async drain(take) {
      let handed = 0;
      for (;;) {
        const taken = await db.transaction(async (trx) => {
          const rows = await takeApprovalMessages(trx, reader, DRAIN_BATCH);
          const messages = rows.flatMap((row) => shape(row) ?? []);
          if (messages.length > 0) await take(trx, messages);
          handed += messages.length;
          return rows.length;
        });
        if (taken < DRAIN_BATCH) return handed;
      }
    },
  });
  return {
    webhooks: feed('for_webhooks', (row) => ({ type: row.type, podId: row.pod_id, at: row.at, data: row.webhook_data })),
    agents: feed('for_agents', (row) =>
      row.agent_data && row.agent_ids.length > 0
        ? { type: row.type, podId: row.pod_id, agentIds: row.agent_ids, data: row.agent_data }
        : undefined,
    ),
  };
}
