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

/**
 * The CRC32 of the body in base62. A CRC32 is below 2^32, so plain numbers carry it: no BigInt
 * division per digit (every broker check verifies a token's checksum).
 */
function checksum(body: string): string {
  let out = '';
  let rest = crc32(body);
  while (rest > 0) {
    out = ALPHABET[rest % 62] + out;
    rest = Math.floor(rest / 62);
  }
  return out.padStart(CHECKSUM_LENGTH, '0');
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
