import { createPrivateKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { decodeKey } from './sealed-box';

/** What a development installation signs human JWTs and seals values with when nothing is configured. */
export interface DevelopmentSecrets {
  /** JWT_SECRET: 256 random bits, base64url. */
  jwtSecret: string;
  /** APPROVAL_ARGS_KEY: 32 random bytes, base64. */
  approvalArgsKey: string;
}

function fresh(): DevelopmentSecrets {
  return { jwtSecret: randomBytes(32).toString('base64url'), approvalArgsKey: randomBytes(32).toString('base64') };
}

function parse(text: string, file: string): DevelopmentSecrets {
  const secrets = JSON.parse(text) as Partial<DevelopmentSecrets>;
  if (typeof secrets.jwtSecret !== 'string' || secrets.jwtSecret.length < 32)
    throw new Error(`${file} holds no jwtSecret of 32 characters or more`);
  if (typeof secrets.approvalArgsKey !== 'string' || !decodeKey(secrets.approvalArgsKey))
    throw new Error(`${file} holds no approvalArgsKey of 32 bytes in base64`);
  return { jwtSecret: secrets.jwtSecret, approvalArgsKey: secrets.approvalArgsKey };
}

/**
 * The development secrets of this installation, made at random the first time anything asks
 * (the service, the admin command, a test) and kept in `file` (owner-only), so that every process
 * of the checkout signs and verifies with the same ones and a restart still opens what was
 * sealed. No secret is in the source: a token signed with anything it holds is worth nothing.
 * Concurrent first starts agree: the file appears whole (a hard link of a written one) or not at
 * all, and whoever loses reads the winner's.
 */
export function developmentSecrets(file: string): DevelopmentSecrets {
  return madeOnce(
    file,
    () => `${JSON.stringify(fresh(), null, 2)}\n`,
    (text) => parse(text, file),
  );
}

/**
 * The Ed25519 key (PKCS#8 PEM) a development installation signs its trail's checkpoints with when
 * TRAIL_SIGNING_KEY is unset: made once beside the other secrets (`trail-signing-key.pem`).
 */
export function developmentTrailKey(stateDir: string): string {
  const file = path.resolve(stateDir, 'trail-signing-key.pem');
  const make = () => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  return madeOnce(file, make, (text) => {
    if (createPrivateKey(text).asymmetricKeyType !== 'ed25519') throw new Error(`${file} holds no Ed25519 private key`);
    return text;
  });
}

/** The file's contents read, or written whole by whoever comes first (then read by the others). */
function madeOnce<T>(file: string, make: () => string, read: (text: string) => T): T {
  try {
    return read(readFileSync(file, 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const text = make();
  const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(draft, text, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(draft, file);
    return read(text);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return read(readFileSync(file, 'utf8'));
  } finally {
    unlinkSync(draft);
  }
}
