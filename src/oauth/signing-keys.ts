import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type { KeyRing } from '../credentials/sealed-box';
import type { Database } from '../db/database';
import { deleteSigningKeys, insertSigningKey, listSigningKeys, lockSigningKeys } from './repository';

/** A private signing key as a JWK (what oidc-provider's `jwks` takes). */
export type PrivateJwk = Record<string, unknown> & { kid: string };

export interface SigningKeyPolicy {
  /** A key older than this is succeeded by a new one. */
  rotateAfterMs: number;
  /** Keys kept published after being succeeded: long enough for what they signed to expire. */
  keepPrevious: number;
}

const additionalData = (kid: string) => `oauth-signing-key:${kid}`;

function newKey(): PrivateJwk {
  const jwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });
  return { ...jwk, kid: randomUUID(), alg: 'ES256', use: 'sig' };
}

/**
 * The authorization server's signing keys, newest first (the first signs, all are published in the
 * JWKS). Kept in Postgres, each private key sealed with the service's key ring, so every replica
 * signs with the same keys and a database dump alone signs nothing. When the newest key is older
 * than the rotation period, or was sealed under a key no longer in the ring (the ring rotated, or
 * another installation shares the database), a new one is made, under an advisory lock so replicas
 * starting together make one; the oldest beyond `keepPrevious` are dropped.
 */
export async function currentSigningKeys(db: Database, keys: KeyRing, policy: SigningKeyPolicy, now: number): Promise<PrivateJwk[]> {
  const rows = await db.transaction(async (trx) => {
    await lockSigningKeys(trx);
    let stored = await listSigningKeys(trx);
    const newest = stored[0];
    if (!newest || now - newest.created_at.getTime() >= policy.rotateAfterMs || !openKey(keys, newest)) {
      const jwk = newKey();
      const sealed = keys.seal('oauth-signing-key', Buffer.from(JSON.stringify(jwk)), additionalData(jwk.kid));
      await insertSigningKey(trx, {
        kid: jwk.kid,
        sealed_jwk: JSON.stringify({ keyId: sealed.keyId, box: sealed.box.toString('base64') }),
        // Newest in the listing even where an injected clock runs behind the stored keys.
        created_at: new Date(Math.max(now, (newest?.created_at.getTime() ?? 0) + 1)),
      });
      stored = await listSigningKeys(trx);
    }
    await deleteSigningKeys(
      trx,
      stored.slice(1 + policy.keepPrevious).map((row) => row.kid),
    );
    return stored.slice(0, 1 + policy.keepPrevious);
  });
  // A key sealed under a key no longer in the ring cannot sign: it is skipped, never guessed.
  const opened = rows.map((row) => openKey(keys, row)).filter((jwk): jwk is PrivateJwk => jwk !== undefined);
  if (opened.length === 0) throw new Error('no OAuth signing key opens with the configured sealing keys');
  return opened;
}

/**
 * The public halves of the signing keys as stored now (newest first): what this service verifies its
 * own access tokens with, whichever replica signed them (each replica signs with the newest key it
 * found at start, so the stored keys, not this replica's, are the ones to trust).
 */
export async function publishedKeys(db: Database, keys: KeyRing): Promise<PublicJwk[]> {
  const rows = await listSigningKeys(db);
  return rows
    .map((row) => openKey(keys, row))
    .filter((jwk): jwk is PrivateJwk => jwk !== undefined)
    .map(({ kty, crv, x, y, kid, alg }) => ({ kty, crv, x, y, kid, alg, use: 'sig' }) as PublicJwk);
}

export type PublicJwk = { kty: string; crv: string; x: string; y: string; kid: string; alg: string; use: 'sig' };

function openKey(keys: KeyRing, row: { kid: string; sealed_jwk: string }): PrivateJwk | undefined {
  const { keyId, box } = JSON.parse(row.sealed_jwk) as { keyId: string; box: string };
  const plain = keys.open('oauth-signing-key', { keyId, box: Buffer.from(box, 'base64') }, additionalData(row.kid));
  return plain ? (JSON.parse(plain.toString('utf8')) as PrivateJwk) : undefined;
}
