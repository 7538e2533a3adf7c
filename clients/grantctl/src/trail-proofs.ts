import { createHash, createPublicKey, verify } from 'node:crypto';
import { canonicalize } from 'json-canonicalize';

/**
 * Offline checks of the service's call trail (contract §22), needing nothing of the service: a
 * signed checkpoint against a pinned verifier key (C2SP signed-note, Ed25519), a record's
 * inclusion and two checkpoints' consistency (RFC 9162 §2.1.3.2 and §2.1.4.2, as the RFC writes
 * the verifier's steps). The service's own code is not used: a client that trusted it would prove nothing.
 */
export interface Checkpoint {
  origin: string;
  size: number;
  root: Buffer;
}

const sha256 = (...parts: Buffer[]) => parts.reduce((h, part) => h.update(part), createHash('sha256')).digest();
const node = (left: Buffer, right: Buffer) => sha256(Buffer.from([1]), left, right);
export const leafHash = (leaf: Buffer) => sha256(Buffer.from([0]), leaf);

/** The verifier key `<name>+<hex key id>+<base64 of 0x01 and the Ed25519 key>`, checked whole. */
function parseVerifierKey(text: string) {
  // The key's base64 may hold plus signs itself: the name and the id end at the first two.
  const [, name, id, key] = /^([^+\s]+)\+([0-9a-f]{8})\+([A-Za-z0-9+/=]+)$/.exec(text.trim()) ?? [];
  const raw = Buffer.from(key ?? '', 'base64');
  if (!name || !id || raw.length !== 33 || raw[0] !== 1) throw new Error('not an Ed25519 verifier key in note format');
  const keyId = sha256(Buffer.from(`${name}\n`), raw).subarray(0, 4);
  if (keyId.toString('hex') !== id) throw new Error("the verifier key's id does not match its key");
  const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.subarray(1).toString('base64url') }, format: 'jwk' });
  return { name, keyId, publicKey };
}

/** The checkpoint of a signed note that the pinned key signed; throws saying why not. */
export function openCheckpoint(note: string, verifierKey: string): Checkpoint {
  const key = parseVerifierKey(verifierKey);
  const split = note.lastIndexOf('\n\n');
  if (split < 0 || !note.endsWith('\n')) throw new Error('not a signed note');
  const body = note.slice(0, split + 1);
  const signed = note
    .slice(split + 2, -1)
    .split('\n')
    .some((line) => {
      const match = /^\u2014 (\S+) (\S+)$/u.exec(line);
      if (!match || match[1] !== key.name) return false;
      const signature = Buffer.from(match[2]!, 'base64');
      return (
        signature.length === 68 &&
        signature.subarray(0, 4).equals(key.keyId) &&
        verify(null, Buffer.from(body), key.publicKey, signature.subarray(4))
      );
    });
  if (!signed) throw new Error('the checkpoint carries no valid signature of the pinned key');
  const [origin, size, root, ...extensions] = body.slice(0, -1).split('\n');
  if (origin !== key.name || !/^(0|[1-9][0-9]{0,15})$/.test(size ?? '') || extensions.some((line) => line === '')) {
    throw new Error('not a checkpoint of the pinned log');
  }
  const hash = Buffer.from(root ?? '', 'base64');
  if (hash.length !== 32) throw new Error("the checkpoint's root is not a SHA-256 hash");
  return { origin, size: Number(size), root: hash };
}

/** The leaf of a call record as the API reads it (contract §22: RFC 8785 JSON of ten members). */
export function recordLeaf(record: Record<string, unknown>): Buffer {
  const leaf = {
    callId: record.id,
    grantId: record.grantId,
    rootId: record.rootId,
    tool: record.tool,
    argsDigest: record.argsDigest,
    decision: record.decision,
    reason: record.decision === 'approval_required' ? 'approval_required' : record.reason,
    approvalId: record.approvalId ?? null,
    requestedAt: record.requestedAt,
    principal: record.principal,
  };
  return Buffer.from(canonicalize(leaf), 'utf8');
}

/** The leaf of a call's reported outcome: `{callId, outcome, completedAt}` as RFC 8785 JSON. */
export function outcomeLeaf(record: Record<string, unknown>): Buffer {
  return Buffer.from(canonicalize({ callId: record.id, outcome: record.outcome, completedAt: record.completedAt }), 'utf8');
}

const lsb = (n: number) => n % 2 === 1;
const half = (n: number) => Math.floor(n / 2);

/** RFC 9162 §2.1.3.2. */
export function verifyInclusion(leafIndex: number, size: number, leaf: Buffer, proof: Buffer[], root: Buffer): boolean {
  if (leafIndex >= size) return false;
  let fn = leafIndex;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) return false;
    if (lsb(fn) || fn === sn) {
      r = node(p, r);
      while (!lsb(fn) && fn !== 0) [fn, sn] = [half(fn), half(sn)];
    } else {
      r = node(r, p);
    }
    [fn, sn] = [half(fn), half(sn)];
  }
  return sn === 0 && r.equals(root);
}

/** RFC 9162 §2.1.4.2 (equal sizes: equal roots, no proof). */
export function verifyConsistency(first: Checkpoint, second: Checkpoint, proof: Buffer[]): boolean {
  if (first.size > second.size) return false;
  if (first.size === second.size) return proof.length === 0 && first.root.equals(second.root);
  if (first.size === 0) return proof.length === 0;
  if (proof.length === 0) return false;
  const path = Number.isInteger(Math.log2(first.size)) ? [first.root, ...proof] : [...proof];
  let fn = first.size - 1;
  let sn = second.size - 1;
  while (lsb(fn)) [fn, sn] = [half(fn), half(sn)];
  let fr = path[0]!;
  let sr = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (lsb(fn) || fn === sn) {
      fr = node(c, fr);
      sr = node(c, sr);
      while (!lsb(fn) && fn !== 0) [fn, sn] = [half(fn), half(sn)];
    } else {
      sr = node(sr, c);
    }
    [fn, sn] = [half(fn), half(sn)];
  }
  return sn === 0 && fr.equals(first.root) && sr.equals(second.root);
}
