import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * Opaque bearer tokens: `<prefix>_<40 base62 chars of randomness><6 base62 chars of CRC32>`.
 * 30 random bytes carry 240 bits; the checksum lets secret scanners (and this service) tell a
 * real token from a typo without a database look-up. Only the SHA-256 of a token is stored.
 */
export type TokenPrefix = 'art' | 'bkt';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BODY_LENGTH = 40;
const CHECKSUM_LENGTH = 6;

function base62(value: bigint, width: number): string {
  let out = '';
  let rest = value;
  while (rest > 0n) {
    out = ALPHABET[Number(rest % 62n)] + out;
    rest /= 62n;
  }
  return out.padStart(width, '0');
}

function checksum(body: string): string {
  return base62(BigInt(crc32(body)), CHECKSUM_LENGTH);
}

export function mintToken(prefix: TokenPrefix): string {
  const body = base62(BigInt(`0x${randomBytes(30).toString('hex')}`), BODY_LENGTH).slice(-BODY_LENGTH);
  return `${prefix}_${body}${checksum(body)}`;
}

/** Shape and checksum only; says nothing about whether the token exists. */
export function hasValidShape(token: string, prefix: TokenPrefix): boolean {
  const expectedLength = prefix.length + 1 + BODY_LENGTH + CHECKSUM_LENGTH;
  if (token.length !== expectedLength || !token.startsWith(`${prefix}_`)) return false;
  const body = token.slice(prefix.length + 1, prefix.length + 1 + BODY_LENGTH);
  if (!/^[0-9A-Za-z]+$/.test(body)) return false;
  return constantTimeEqual(token.slice(-CHECKSUM_LENGTH), checksum(body));
}

export function hashToken(token: string): string {
  // The one-shot hash: no Hash object per call (every broker check hashes two tokens).
  return hash('sha256', token, 'hex');
}

export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
