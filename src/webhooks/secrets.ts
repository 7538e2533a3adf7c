import { randomBytes } from 'node:crypto';
import type { KeyRing } from '../credentials/sealed-box';

/**
 * A webhook's signing secret, in the Standard Webhooks form `whsec_<base64 of 32 random bytes>`.
 * Shown once, at creation; kept sealed (the service must read it back to sign), bound to the
 * webhook's id so a sealed secret moved to another webhook does not open.
 */
export function mintSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export function sealSecret(keys: KeyRing, webhookId: string, secret: string) {
  const sealed = keys.seal('webhook-secret', Buffer.from(secret, 'utf8'), `webhook-secret\0${webhookId}`);
  return { secret_sealed: sealed.box, secret_key_id: sealed.keyId };
}

/** The secret, or undefined when no configured key opens it (then nothing is signed or sent). */
export function openSecret(keys: KeyRing, row: { id: string; secret_sealed: Buffer; secret_key_id: string }): string | undefined {
  return keys.open('webhook-secret', { keyId: row.secret_key_id, box: row.secret_sealed }, `webhook-secret\0${row.id}`)?.toString('utf8');
}
