import { createCipheriv, createDecipheriv, hash, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Secrets the service must read back (a pending approval's arguments, a webhook's signing
 * secret), sealed with AES-256-GCM under a key ring: the current key seals, every key of the ring
 * opens. Each purpose seals under its own key, derived from the configured key with HKDF-SHA256
 * (info = the purpose), so a ciphertext of one purpose never opens as another's. The additional
 * data binds a ciphertext to the record it belongs to: moved to another row, it does not open.
 *
 * A sealed value is `nonce (12 bytes) | tag (16 bytes) | ciphertext`, stored beside the id of the
 * configured key that sealed it (`keyIdOf`): rotation adds a key and keeps the old one in the
 * ring until what it sealed is gone.
 */
export interface Sealed {
  keyId: string;
  box: Buffer;
}

export type SealPurpose = 'approval-args' | 'webhook-secret' | 'oauth-signing-key' | 'oauth-cookies';

const NONCE_BYTES = 12;
const TAG_BYTES = 16;
export const KEY_BYTES = 32;

/** A short public name of a key: the first 16 hex digits of a SHA-256 of it, never the key. */
export function keyIdOf(key: Buffer): string {
  return hash('sha256', Buffer.concat([Buffer.from('grant-broker key id\0'), key]), 'hex').slice(0, 16);
}

/** A configured key: base64 of exactly 32 bytes (`openssl rand -base64 32`), or undefined. */
export function decodeKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/]{43}=?$/.test(trimmed)) return undefined;
  const key = Buffer.from(trimmed, 'base64');
  return key.length === KEY_BYTES ? key : undefined;
}

export class KeyRing {
  private readonly current: { id: string; key: Buffer };
  private readonly byId = new Map<string, Buffer>();
  /** HKDF once per key and purpose, not per seal. */
  private readonly subKeys = new Map<string, Buffer>();

  /** `current` seals and opens; each of `previous` only opens. */
  constructor(current: Buffer, previous: readonly Buffer[] = []) {
    for (const key of [current, ...previous]) {
      if (key.length !== KEY_BYTES) throw new Error(`a sealing key is ${KEY_BYTES} bytes`);
    }
    this.current = { id: keyIdOf(current), key: current };
    for (const key of [current, ...previous]) if (!this.byId.has(keyIdOf(key))) this.byId.set(keyIdOf(key), key);
  }

  get currentKeyId(): string {
    return this.current.id;
  }

  seal(purpose: SealPurpose, plaintext: Buffer, additionalData: string): Sealed {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.subKey(this.current.id, this.current.key, purpose), nonce, {
      authTagLength: TAG_BYTES,
    });
    cipher.setAAD(Buffer.from(additionalData, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return { keyId: this.current.id, box: Buffer.concat([nonce, cipher.getAuthTag(), ciphertext]) };
  }

  /**
   * The plaintext, or undefined when no key of the ring has that id, or the box was altered,
   * moved to another record, or sealed for another purpose: never a guess.
   */
  open(purpose: SealPurpose, sealed: Sealed, additionalData: string): Buffer | undefined {
    const key = this.byId.get(sealed.keyId);
    if (!key || sealed.box.length < NONCE_BYTES + TAG_BYTES) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.subKey(sealed.keyId, key, purpose), sealed.box.subarray(0, NONCE_BYTES), {
        authTagLength: TAG_BYTES,
      });
      decipher.setAAD(Buffer.from(additionalData, 'utf8'));
      decipher.setAuthTag(sealed.box.subarray(NONCE_BYTES, NONCE_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(sealed.box.subarray(NONCE_BYTES + TAG_BYTES)), decipher.final()]);
    } catch {
      return undefined;
    }
  }

  /**
   * Keys derived for a purpose that needs raw keys rather than sealed boxes (cookie signatures):
   * the current key's first, then every previous key's, so what an older key signed still verifies.
   */
  derivedKeys(purpose: SealPurpose): Buffer[] {
    return [...this.byId].map(([id, key]) => this.subKey(id, key, purpose));
  }

  private subKey(keyId: string, key: Buffer, purpose: SealPurpose): Buffer {
    const name = `${keyId}/${purpose}`;
    let derived = this.subKeys.get(name);
    if (!derived) {
      derived = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), `grant-broker ${purpose}`, KEY_BYTES));
      this.subKeys.set(name, derived);
    }
    return derived;
  }
}
