import type { Database } from '../db/database';
import { ApiError } from '../kernel/errors';
import type { AgentPrincipal, HumanPrincipal } from '../kernel/principals';
import type { ReadableGrant } from './deps';
import { findCallRecord, findHeldCallRecord } from './repositories/call-records';
import { checkpointOfSize, latestCheckpoint } from './repositories/tree';
import { checkTimesAround, LeafGone, signedSizeOf, treeReader, type BlockCache, type BlockHint, type SignedSize } from './tree-store';
import type { Checkpointer } from './tree/checkpointer';
import type { TrailSigner } from './tree/note';
import { consistencyProof, inclusionProof, type ReadNodes } from './tree/proofs';

/**
 * What an auditor asks of the trail's Merkle tree (contract §22): the verifier key, the latest
 * signed checkpoint, and proofs against checkpoints. Sizes and hashes only, except an inclusion
 * proof, which names a call and is shown to whoever may read the call's grant.
 */
export interface TrailVerificationDeps {
  db: Database;
  signer: TrailSigner;
  checkpointer: Checkpointer;
  readableGrant(principal: HumanPrincipal | AgentPrincipal, grantId: string): Promise<ReadableGrant>;
  /** Complete blocks of the tree kept (src/speedups/proof-blocks.ts); none: each proof rebuilds its blocks. */
  blocks?: BlockCache;
}

export function createTrailVerification(deps: TrailVerificationDeps) {
  // A leaf the tree can no longer rebuild is the store's fault, said plainly, not a 500.
  // A proof against a signed checkpoint names it, so that its partial last block may be kept once proven under its root.
  const readerOf = (hint?: BlockHint, signed?: SignedSize): ReadNodes => {
    const reader = treeReader(deps.db, deps.blocks, hint, signed);
    return (nodes) =>
      reader(nodes).catch((error: unknown) => {
        if (error instanceof LeafGone) throw new ApiError('not_provable', error.message);
        throw error;
      });
  };
  const base64 = (hashes: Buffer[]) => hashes.map((hash) => hash.toString('base64'));

  /** The newest checkpoint; before the first, one signed now (of the tree as it is). */
  async function latest() {
    const stored = await latestCheckpoint(deps.db);
    if (stored) return stored;
    await deps.checkpointer.signNow();
    return (await latestCheckpoint(deps.db))!;
  }

  return {
    verifierKey: () => `${deps.signer.verifierKey}\n`,
    checkpoint: async () => (await latest()).note,

    async consistency(from: number, to: number): Promise<{ hashes: string[] }> {
      if (from < 1 || from > to) throw new ApiError('invalid_request', 'from must be at least 1 and at most to');
      const newest = await latest();
      if (newest.size < to) throw new ApiError('not_in_checkpoint', `no signed checkpoint covers size ${to} yet`);
      const read = readerOf(undefined, newest.size === to ? signedSizeOf(newest.note) : undefined);
      return { hashes: from === to ? [] : base64(await consistencyProof(from, to, read)) };
    },

    /** The proof of a call's record leaf, or (`leaf: 'outcome'`) of its reported outcome's; a held record's too. */
    async inclusion(principal: HumanPrincipal | AgentPrincipal, callId: string, treeSize?: number, leaf: 'record' | 'outcome' = 'record') {
      // The checkpoint is read alongside the record (one round trip less), and said only once the record may be seen.
      const [live, checkpoint] = await Promise.all([
        findCallRecord(deps.db, callId),
        treeSize === undefined ? latest() : checkpointOfSize(deps.db, treeSize),
      ]);
      const record = live ?? (await findHeldCallRecord(deps.db, callId));
      if (!record) throw new ApiError('not_found', 'no such call');
      const index = leaf === 'outcome' ? record.outcome_leaf_index : record.leaf_index;
      const size = checkpoint?.size ?? 0;
      // The proof's reads go alongside the grant's: a round trip less. Nothing of the proof is said,
      // nor any error of it thrown, before the caller is known to read the grant.
      // The proven leaf's block is looked for around when the leaf was appended, which the record says.
      const appendedAt = leaf === 'outcome' ? record.completed_at : record.requested_at;
      const hint = index !== null && appendedAt ? checkTimesAround(index, appendedAt) : undefined;
      const proving =
        index !== null && index < size ? inclusionProof(index, size, readerOf(hint, signedSizeOf(checkpoint!.note))) : undefined;
      proving?.catch(() => undefined);
      await deps.readableGrant(principal, record.grant_id);
      if (!checkpoint) throw new ApiError('not_in_checkpoint', `no signed checkpoint has size ${treeSize}`);
      if (leaf === 'outcome' && index === null) throw new ApiError('not_found', 'no outcome of this call is in the trail');
      if (!proving || index === null) {
        throw new ApiError('not_in_checkpoint', `the checkpoint of size ${checkpoint.size} does not cover this ${leaf} yet`);
      }
      const hashes = await proving;
      return { leafIndex: index, treeSize: checkpoint.size, hashes: base64(hashes) };
    },
  };
}

export type TrailVerification = ReturnType<typeof createTrailVerification>;
