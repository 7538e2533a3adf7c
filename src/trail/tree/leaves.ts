import { createHash } from 'node:crypto';
import { canonicalize } from 'json-canonicalize';

/**
 * What the trail's Merkle tree holds (contract §22): a check's record and an outcome report, each
 * a leaf, as the RFC 8785 canonical JSON of exactly these members, so that anyone holding a record
 * as the API reads it rebuilds its leaf. The arguments appear only as their digest.
 */
export interface RecordLeaf {
  callId: string;
  grantId: string;
  rootId: string;
  tool: string;
  argsDigest: string;
  decision: 'allow' | 'deny' | 'approval_required';
  reason: string;
  approvalId: string | null;
  requestedAt: string;
  principal: { kind: string; id: string };
}

export interface OutcomeLeaf {
  callId: string;
  outcome: 'succeeded' | 'failed';
  completedAt: string;
}

/** The decision a check answered, as its stored outcome says (a record keeps the answer's outcome). */
export function decisionOfOutcome(outcome: string): RecordLeaf['decision'] {
  if (outcome === 'awaiting_approval') return 'approval_required';
  return outcome === 'denied' ? 'deny' : 'allow';
}

export function recordLeaf(leaf: RecordLeaf): Buffer {
  // Exactly these members, picked in one literal (no spread of a copy): every check's record hashes one.
  const members = {
    callId: leaf.callId,
    grantId: leaf.grantId,
    rootId: leaf.rootId,
    tool: leaf.tool,
    argsDigest: leaf.argsDigest,
    decision: leaf.decision,
    reason: leaf.reason,
    approvalId: leaf.approvalId,
    requestedAt: leaf.requestedAt,
    principal: { kind: leaf.principal.kind, id: leaf.principal.id },
  };
  return Buffer.from(canonicalize(members), 'utf8');
}

export function outcomeLeaf(leaf: OutcomeLeaf): Buffer {
  return Buffer.from(canonicalize({ callId: leaf.callId, outcome: leaf.outcome, completedAt: leaf.completedAt }), 'utf8');
}

/** RFC 9162 §2.1.1: a leaf's hash is SHA-256 of 0x00 and the leaf; an interior node's of 0x01 and its children. */
export function leafHash(leaf: Buffer): Buffer {
  return createHash('sha256').update(LEAF_PREFIX).update(leaf).digest();
}

export function nodeHash(left: Buffer, right: Buffer): Buffer {
  return createHash('sha256').update(NODE_PREFIX).update(left).update(right).digest();
}

const LEAF_PREFIX = Buffer.from([0]);
const NODE_PREFIX = Buffer.from([1]);

/** The empty tree's hash: SHA-256 of nothing. */
export const EMPTY_ROOT = createHash('sha256').digest();

/** The root of a tree from its frontier (the hashes of its complete subtrees, largest first). */
export function rootOfFrontier(frontier: readonly Buffer[]): Buffer {
  if (frontier.length === 0) return EMPTY_ROOT;
  let root = frontier[frontier.length - 1]!;
  for (let i = frontier.length - 2; i >= 0; i -= 1) root = nodeHash(frontier[i]!, root);
  return root;
}

/** A call record as the API presents it: what its leaves are rebuilt from (contract §22). */
export interface PresentedLeaves {
  id: string;
  grantId: string;
  rootId: string;
  tool: string;
  argsDigest: string;
  decision: RecordLeaf['decision'];
  reason: string;
  approvalId: string | null;
  requestedAt: string;
  principal: { kind: string; id: string };
  outcome: string;
  completedAt: string | null;
  leafIndex: number | null;
  outcomeLeafIndex: number | null;
}

/**
 * The leaves of a record as the API presents it, by index: its record's and, once reported, its
 * outcome's. A call held for approval keeps `approval_required` as its leaf's reason, whatever
 * became of the approval since (the record as read may say `approval_denied`).
 */
export function leavesOfRecord(record: PresentedLeaves): Array<{ index: number; hash: Buffer }> {
  const leaves: Array<{ index: number; hash: Buffer }> = [];
  if (record.leafIndex !== null) {
    const reason = record.decision === 'approval_required' ? 'approval_required' : record.reason;
    const leaf = recordLeaf({ ...record, callId: record.id, reason });
    leaves.push({ index: record.leafIndex, hash: leafHash(leaf) });
  }
  if (record.outcomeLeafIndex !== null && (record.outcome === 'succeeded' || record.outcome === 'failed') && record.completedAt) {
    const leaf = outcomeLeaf({ callId: record.id, outcome: record.outcome, completedAt: record.completedAt });
    leaves.push({ index: record.outcomeLeafIndex, hash: leafHash(leaf) });
  }
  return leaves;
}
