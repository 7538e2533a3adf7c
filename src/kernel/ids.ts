import { typeid } from 'typeid-js';

/**
 * Stripe-style prefixed identifiers: `grt_01jd…` (TypeID: a prefix and a UUIDv7 in base32),
 * opaque to clients, random, and sortable by creation time.
 */
export const ID_PREFIXES = {
  pod: 'pod',
  agent: 'agt',
  grant: 'grt',
  connection: 'con',
  installation: 'ins',
  broker: 'brk',
  event: 'evt',
  runtimeToken: 'rtk',
  brokerToken: 'btk',
  call: 'call',
  approval: 'apr',
  webhook: 'whk',
  /** A webhook message: its `webhook-id`, the same on every delivery attempt. */
  webhookMessage: 'msg',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

export function newId(kind: IdKind): string {
  return typeid(ID_PREFIXES[kind]).toString();
}

/** True when the string has the shape of an id of this kind (used to 404 early on junk). */
export function looksLikeId(kind: IdKind, value: string): boolean {
  return new RegExp(`^${ID_PREFIXES[kind]}_[0-7][0-9a-hjkmnp-tv-z]{25}$`).test(value);
}
