import { createHash, createPublicKey } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { PolicyLoadError } from '../load-error';

/**
 * OPA bundle signatures (`.signatures.json`, as `opa build --signing-key` writes them): one JWT
 * whose payload lists every file of the bundle with its SHA-256. Structured files (`.json`,
 * `.manifest`) are hashed as OPA hashes them: keys sorted, no whitespace, so formatting does not
 * matter; everything else byte for byte. Every file must be listed and match, and every listed file
 * must be there.
 */
export interface BundleKeys {
  /** PEM public keys (RS*, PS*, ES*): any of them may have signed (key rotation). */
  publicKeys: string[];
  /** An HS* shared secret. */
  secret?: string;
}

const PUBLIC_ALGORITHMS: jwt.Algorithm[] = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512'];
const SECRET_ALGORITHMS: jwt.Algorithm[] = ['HS256', 'HS384', 'HS512'];
const SIGNATURES = '.signatures.json';

export function hasKeys(keys: BundleKeys): boolean {
  return keys.publicKeys.length > 0 || Boolean(keys.secret);
}

/** PEM blocks of a text that may hold several (an old and a new key during a rotation). */
export function pemBlocks(text: string): string[] {
  const blocks = text.match(/-----BEGIN [A-Z ]+-----[\s\S]+?-----END [A-Z ]+-----/g) ?? [];
  for (const block of blocks) createPublicKey(block); // a malformed key fails at start, not at load
  return blocks;
}

export function verifyBundle(files: ReadonlyMap<string, Buffer>, keys: BundleKeys): void {
  const signatures = files.get(SIGNATURES);
  if (!signatures) throw new PolicyLoadError('unsigned', 'the bundle is not signed (no .signatures.json)');
  let tokens: unknown;
  try {
    tokens = (JSON.parse(signatures.toString('utf8')) as { signatures?: unknown }).signatures;
  } catch {
    // tokens stays undefined: refused just below
  }
  if (!Array.isArray(tokens) || tokens.length !== 1 || typeof tokens[0] !== 'string') {
    throw new PolicyLoadError('bad_signature', '.signatures.json must hold exactly one JWT');
  }
  const payload = verifiedPayload(tokens[0], keys);
  const listed = new Map((payload.files ?? []).map((file) => [file.name.replace(/^\/+/, ''), file]));
  for (const [name, content] of files) {
    if (name === SIGNATURES) continue;
    const file = listed.get(name);
    if (!file) throw new PolicyLoadError('bad_signature', `${name} is not covered by the bundle signature`);
    if (file.algorithm !== 'SHA-256')
      throw new PolicyLoadError('bad_signature', `${name}: unsupported hashing algorithm ${file.algorithm}`);
    if (file.hash !== fileHash(name, content)) throw new PolicyLoadError('bad_signature', `${name}: digest mismatch`);
    listed.delete(name);
  }
  if (listed.size > 0) throw new PolicyLoadError('incomplete', `signed files missing from the bundle: ${[...listed.keys()].join(', ')}`);
}

function verifiedPayload(token: string, keys: BundleKeys): { files?: Array<{ name: string; hash: string; algorithm: string }> } {
  const attempts: Array<[jwt.Secret, jwt.Algorithm[]]> = [
    ...keys.publicKeys.map((key): [jwt.Secret, jwt.Algorithm[]] => [key, PUBLIC_ALGORITHMS]),
    ...(keys.secret ? [[keys.secret, SECRET_ALGORITHMS] as [jwt.Secret, jwt.Algorithm[]]] : []),
  ];
  for (const [key, algorithms] of attempts) {
    try {
      return jwt.verify(token, key, { algorithms }) as { files?: Array<{ name: string; hash: string; algorithm: string }> };
    } catch {
      // the next key (rotation), or none verifies
    }
  }
  throw new PolicyLoadError('bad_signature', 'the bundle signature does not verify with any configured key');
}

/** OPA's file hash: structured documents through a key-sorted walk, others as bytes. */
export function fileHash(name: string, content: Buffer): string {
  const hash = createHash('sha256');
  if (name.endsWith('.json') || name === '.manifest' || name.endsWith('/.manifest')) {
    hash.update(sortedJson(JSON.parse(content.toString('utf8'))));
  } else {
    hash.update(content);
  }
  return hash.digest('hex');
}

// Not RFC 8785 (json-canonicalize): OPA sorts keys by their UTF-8 bytes and writes numbers as Go
// does; this walk is OPA's (bundle/hash.go), so signatures made by `opa build` verify here.
function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const object = value as Record<string, unknown>;
    return `{${Object.keys(object)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${sortedJson(object[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}
