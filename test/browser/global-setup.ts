import { randomBytes } from 'node:crypto';

/**
 * One fresh database and Redis key prefix for the run (set here, in the runner, so the worker
 * inherits them); each spec's service migrates it on start.
 */
export default function globalSetup(): void {
  const base = process.env.TEST_DATABASE_BASE_URL ?? 'postgres://postgres@127.0.0.1:5432/';
  const name = `gb_browser_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  process.env.DATABASE_URL = `${base}${name}`;
  process.env.REDIS_KEY_PREFIX = `gbtest:${name}:`;
  process.env.NODE_ENV = 'test';
}
