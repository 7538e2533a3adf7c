import { createHash, createPrivateKey, createPublicKey, sign, type KeyObject } from 'node:crypto';

/**
 * Checkpoints as C2SP `tlog-checkpoint` bodies (origin, size, base64 root hash, one per line)
 * signed as C2SP `signed-note`s with Ed25519: the note key's name is the origin, its id the first
 * four bytes of SHA-256(name, newline, 0x01, public key). Go's `sumdb/note` reads them as they are.
 */
export interface TrailSigner {
  origin: string;
  /** The verifier key in note format: `<name>+<hex id>+<base64 of 0x01 and the public key>`. */
  verifierKey: string;
  sign(size: number, root: Buffer): string;
}

const ED25519 = 0x01;

/** The 32 bytes of an Ed25519 public key (the last 32 of its SPKI DER). */
function rawPublicKey(key: KeyObject): Buffer {
  return createPublicKey(key).export({ type: 'spki', format: 'der' }).subarray(-32);
}

export function keyId(name: string, publicKey: Buffer): Buffer {
  return createHash('sha256')
    .update(`${name}\n`)
    .update(Buffer.from([ED25519]))
    .update(publicKey)
    .digest()
    .subarray(0, 4);
}

interface NoteKey {
  key: KeyObject;
  id: Buffer;
  verifierKey: string;
}

function noteKey(origin: string, privateKeyPem: string): NoteKey {
  const key = createPrivateKey(privateKeyPem);
  if (key.asymmetricKeyType !== 'ed25519') throw new Error('the trail signing key is not an Ed25519 private key');
  const publicKey = rawPublicKey(key);
  const id = keyId(origin, publicKey);
  const verifierKey = `${origin}+${id.toString('hex')}+${Buffer.concat([Buffer.from([ED25519]), publicKey]).toString('base64')}`;
  return { key, id, verifierKey };
}

/**
 * A signer for `origin` with a PKCS#8 PEM Ed25519 private key; any other key is refused. With the
 * key it replaces (a rotation), each checkpoint carries both signatures: a verifier pinned to
 * either key accepts it, so auditors move to the new key at their pace.
 */
export function trailSigner(origin: string, privateKeyPem: string, previousKeyPem?: string): TrailSigner {
  const keys = [noteKey(origin, privateKeyPem), ...(previousKeyPem ? [noteKey(origin, previousKeyPem)] : [])];
  return {
    origin,
    verifierKey: keys[0]!.verifierKey,
    sign(size, root) {
      const body = checkpointBody(origin, size, root);
      const lines = keys.map(({ key, id }) => {
        const signature = sign(null, Buffer.from(body, 'utf8'), key);
        return `\u2014 ${origin} ${Buffer.concat([id, signature]).toString('base64')}\n`;
      });
      return `${body}\n${lines.join('')}`;
    },
  };
}

export function checkpointBody(origin: string, size: number, root: Buffer): string {
  return `${origin}\n${size}\n${root.toString('base64')}\n`;
}

/** A log origin a note key may be named: no whitespace, no plus sign (signed-note). */
export const ORIGIN_PATTERN = /^[^\s+]+$/u;
