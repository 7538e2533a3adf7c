import { idBytes, idOfBytes, type IdKind } from '../../kernel/ids';

/**
 * How a call record is stored, and how it is read back: ids as the 16 bytes of their UUID, the
 * arguments' digest as its 32 bytes, outcome and principal kind as small codes, an outcome's usual
 * reason as null. Everything above the repository sees typeids and `sha256:<hex>` as before.
 */

export const OUTCOME_CODES = { pending: 0, denied: 1, succeeded: 2, failed: 3, awaiting_approval: 4 } as const;
export type Outcome = keyof typeof OUTCOME_CODES;
const OUTCOMES = Object.keys(OUTCOME_CODES) as Outcome[];

export const PRINCIPAL_KIND_CODES = { user: 0, agent: 1 } as const;
export type PrincipalKind = keyof typeof PRINCIPAL_KIND_CODES;
const PRINCIPAL_KINDS = Object.keys(PRINCIPAL_KIND_CODES) as PrincipalKind[];

const DIGEST_PREFIX = 'sha256:';

/** A UUID as Postgres accepts it in a `uuid` column or array: 32 hex digits. */
export function uuidOf(kind: IdKind, id: string): string {
  const bytes = idBytes(kind, id);
  if (!bytes) throw new TypeError(`not a ${kind} id`);
  return bytes.toString('hex');
}

/** The id of this kind inside a `uuid` Postgres answers (`xxxxxxxx-xxxx-…`). */
export function idOfUuid(kind: IdKind, uuid: string): string {
  return idOfBytes(kind, Buffer.from(uuid.replaceAll('-', ''), 'hex'));
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * A record's `decision_id`: the id its policy decision was logged under, a UUID as the decision
 * event spells it (lowercase, with dashes); Postgres answers it in that spelling.
 */
export function decisionUuidOf(decisionId: string): string {
  if (!UUID.test(decisionId)) throw new TypeError('not a decision id');
  return decisionId.replaceAll('-', '');
}

export function digestBytes(digest: string): Buffer {
  const hex = digest.slice(DIGEST_PREFIX.length);
  if (!digest.startsWith(DIGEST_PREFIX) || !/^[0-9a-f]{64}$/.test(hex)) throw new TypeError('not a sha256 digest');
  return Buffer.from(hex, 'hex');
}

export function digestOfBytes(bytes: Buffer): string {
  return `${DIGEST_PREFIX}${bytes.toString('hex')}`;
}

/** The reason a record of this outcome has unless it says otherwise: stored as null. */
export function usualReason(outcome: Outcome): string | null {
  if (outcome === 'denied') return null;
  return outcome === 'awaiting_approval' ? 'approval_required' : 'allowed';
}

export function outcomeOf(code: number): Outcome {
  const outcome = OUTCOMES[code];
  if (outcome === undefined) throw new RangeError(`unknown outcome code ${code}`);
  return outcome;
}

export function principalKindOf(code: number): PrincipalKind {
  const kind = PRINCIPAL_KINDS[code];
  if (kind === undefined) throw new RangeError(`unknown principal kind code ${code}`);
  return kind;
}
