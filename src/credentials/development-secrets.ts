import { randomBytes } from 'node:crypto';
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
  try {
    return parse(readFileSync(file, 'utf8'), file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const secrets = fresh();
  const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(draft, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(draft, file);
    return secrets;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return parse(readFileSync(file, 'utf8'), file);
  } finally {
    unlinkSync(draft);
  }
}
