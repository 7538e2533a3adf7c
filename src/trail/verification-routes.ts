import { defineRoute, type CredentialAuthenticators, type Route } from '../kernel/route';
import { z } from '../kernel/schema';
import type { TrailVerification } from './verification';

const size = (description: string) => z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER).openapi({ description });
const hashes = z.array(z.string()).openapi({ description: 'The proof: base64 SHA-256 hashes, in the order of RFC 9162' });
const tag = 'Trail';

/**
 * The trail's Merkle tree for auditors (contract §22): the key and checkpoint and consistency
 * proofs for anyone (sizes and hashes only), a call's inclusion proof with the read scope of its grant.
 */
export function trailVerificationRoutes(verification: TrailVerification, auth: CredentialAuthenticators): Route[] {
  const text = { 'Content-Type': 'text/plain; charset=utf-8' };
  return [
    defineRoute(
      {
        method: 'get',
        path: '/api/trail/key',
        operationId: 'getTrailKey',
        tag,
        summary: "The trail's verifier key in signed-note format (`<origin>+<key id>+<base64 key>`), one line of text/plain",
        auth: null,
        success: { status: 200, description: 'The verifier key' },
      },
      async () => ({ body: verification.verifierKey(), headers: text }),
    ),
    defineRoute(
      {
        method: 'get',
        path: '/api/trail/checkpoint',
        operationId: 'getTrailCheckpoint',
        tag,
        summary: "The trail's latest signed checkpoint (a C2SP checkpoint in a signed note), text/plain",
        description: 'A new one at least every TRAIL_CHECKPOINT_MS while records arrive.',
        auth: null,
        success: { status: 200, description: 'The signed note' },
      },
      async () => ({ body: await verification.checkpoint(), headers: text }),
    ),
    defineRoute(
      {
        method: 'get',
        path: '/api/trail/proofs/consistency',
        operationId: 'getTrailConsistencyProof',
        tag,
        summary: 'A proof that the tree of size `to` extends the tree of size `from`',
        description:
          '`from` 0 or above `to`: 400; `from` equal to `to`: no hashes; `to` past the latest checkpoint: 409 `not_in_checkpoint`.',
        auth: null,
        query: z.strictObject({ from: size('The older tree size (at least 1)'), to: size('The newer tree size') }),
        success: { status: 200, description: 'The consistency proof', schema: z.object({ hashes }) },
        errors: ['not_in_checkpoint', 'not_provable'],
      },
      async ({ query }) => ({ body: await verification.consistency(query.from, query.to) }),
    ),
    defineRoute(
      {
        method: 'get',
        path: '/api/trail/proofs/inclusion',
        operationId: 'getTrailInclusionProof',
        tag,
        summary: "A proof that a call's record is in the tree of a signed checkpoint",
        description:
          "Whoever may read the call's grant (else 404); a held record of a dropped day too. `leaf=outcome`: the proof of the " +
          "outcome's leaf. `treeSize` omitted: the latest checkpoint's. A record no signed " +
          'checkpoint covers yet, or a size no checkpoint has: 409 `not_in_checkpoint`.',
        auth: auth.credentials('human', 'agent'),
        query: z.strictObject({
          callId: z.string().min(1).max(64).openapi({ description: 'The call (`call_…`)' }),
          treeSize: size('The size of a signed checkpoint').optional(),
          leaf: z
            .enum(['record', 'outcome'])
            .optional()
            .openapi({ description: "The call's record leaf (default), or its reported outcome's (404 before it is reported)" }),
        }),
        success: {
          status: 200,
          description: 'The inclusion proof',
          schema: z.object({ leafIndex: z.number().int(), treeSize: z.number().int(), hashes }).openapi('TrailInclusionProof'),
        },
        errors: ['not_found', 'not_in_checkpoint', 'not_provable'],
      },
      async ({ principal, query }) => ({ body: await verification.inclusion(principal, query.callId, query.treeSize, query.leaf) }),
    ),
  ];
}
