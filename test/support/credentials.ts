import { createHmac } from 'node:crypto';
import type { TestService } from './service';

/** Helpers that forge credentials the way an attacker would, for the refusal tests. */

function base64url(value: object | string): string {
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
}

/** A JWT with any header and claims, signed with HMAC-SHA256 over `secret` (or unsigned). */
export function forgeJwt(header: object, claims: object, hmacSecret?: string | Buffer): string {
  const signingInput = `${base64url(header)}.${base64url(claims)}`;
  const signature = hmacSecret === undefined ? '' : createHmac('sha256', hmacSecret).update(signingInput).digest('base64url');
  return `${signingInput}.${signature}`;
}

export function inOneHour(): number {
  return Math.floor(Date.now() / 1000) + 3600;
}

/**
 * What the service makes of a credential, seen from POST /api/pods (a human-only endpoint):
 * 403 `credential_not_accepted` means it authenticated as a non-human; 401 means it did not.
 * Only the foundation's routes are used, so this works before the agent runtime routes exist.
 */
export async function probeNonHuman(service: TestService, token: string): Promise<{ status: number; code: string }> {
  const res = await service.http.post('/api/pods').set('Authorization', `Bearer ${token}`).send({ name: 'probe' });
  return { status: res.status, code: res.body.code };
}

export const AUTHENTICATED_NON_HUMAN = { status: 403, code: 'credential_not_accepted' };
export const UNAUTHENTICATED = { status: 401, code: 'unauthenticated' };
