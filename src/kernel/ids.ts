import { randomFillSync, randomInt } from 'node:crypto';
import { fromUUIDBytes, toUUIDBytes, typeid, type TypeId } from 'typeid-js';

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

/** Each kind's id shape, compiled once: every call record's ids are checked against it when written. */
const ID_SHAPES = Object.fromEntries(
  Object.entries(ID_PREFIXES).map(([kind, prefix]) => [kind, new RegExp(`^${prefix}_[0-7][0-9a-hjkmnp-tv-z]{25}$`)]),
) as Record<IdKind, RegExp>;

/** True when the string has the shape of an id of this kind (used to 404 early on junk). */
export function looksLikeId(kind: IdKind, value: string): boolean {
  return ID_SHAPES[kind].test(value);
}

/**
 * Random bytes for ids, drawn from the CSPRNG a block at a time: every check mints an id, and one
 * fill per block costs less CPU than one per id. Each id copies its bytes out and the block is
 * refilled before any byte is used twice.
 */
const RANDOM_BLOCK_BYTES = 4096;
const random = { block: Buffer.alloc(RANDOM_BLOCK_BYTES), offset: RANDOM_BLOCK_BYTES };

function randomId16(): Buffer {
  if (random.offset + 16 > RANDOM_BLOCK_BYTES) {
    randomFillSync(random.block);
    random.offset = 0;
  }
  const bytes = Buffer.from(random.block.subarray(random.offset, random.offset + 16));
  random.offset += 16;
  return bytes;
}

/**
 * What this process counts every newIdAt with, from a random start: 12 bits of it fill UUIDv7's
 * rand_a and 30 more the top of rand_b, the last 32 bits stay random. It never starts again, so
 * the ids this process mints at any one millisecond increase in the order they were made, even
 * when other instants are minted between them (a test's clock beside the wall clock, say).
 */
const sequence = { next: randomInt(0, 2 ** 40) };

/**
 * An id whose UUIDv7 carries `ms` as its time: a call's id is minted at the time the check stamps
 * on its record, so the record's partition (its day) can be found from the id alone, and two
 * records of one instant list in the order they were made.
 */
export function newIdAt(kind: IdKind, ms: number): string {
  const bytes = randomId16();
  const count = sequence.next;
  sequence.next += 1;
  const high = Math.floor(count / 2 ** 30) & 0xfff;
  const low = count % 2 ** 30;
  bytes.writeUIntBE(Math.floor(ms), 0, 6);
  bytes.writeUInt16BE(0x7000 | high, 6); // version 7, then the count's high 12 bits
  bytes[8] = 0x80 | ((low >>> 24) & 0x3f); // RFC 9562 variant, then the count's next 30 bits
  bytes[9] = (low >>> 16) & 0xff;
  bytes[10] = (low >>> 8) & 0xff;
  bytes[11] = low & 0xff;
  return fromUUIDBytes(ID_PREFIXES[kind], bytes);
}

/** The 16 bytes of the UUID inside an id of this kind; undefined when it is not one. */
export function idBytes(kind: IdKind, value: string): Buffer | undefined {
  if (!looksLikeId(kind, value)) return undefined;
  // The unboxed functions: the shape is checked above, so no TypeID object (which decodes the
  // suffix twice more to validate it) is made for the one decode wanted. Every check mints a
  // call id and its record's row decodes it again.
  return Buffer.from(toUUIDBytes(value as TypeId<string>));
}

/** The id of this kind whose UUID is these 16 bytes. */
export function idOfBytes(kind: IdKind, bytes: Uint8Array): string {
  return fromUUIDBytes(ID_PREFIXES[kind], bytes);
}

/** The milliseconds since the epoch an id's UUIDv7 was minted at. */
export function idTimeMs(bytes: Uint8Array): number {
  return Buffer.from(bytes).readUIntBE(0, 6);
}
