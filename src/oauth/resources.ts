import type { Database } from '../db/database';
import { ApiError } from '../kernel/errors';
import { brokerExists, findResource, insertResource } from './repository';

/**
 * Registers a gateway's resource URI (its public URL ending in `/mcp`) for a broker: tokens are
 * issued for registered resources alone, and a consent offers only that broker's grants. An
 * absolute http(s) URL without credentials, query or fragment; idempotent; a resource already
 * registered for another broker is refused (a token's audience names one gateway).
 */
export async function registerGatewayResource(db: Database, brokerId: string, resource: string) {
  const url = URL.parse(resource);
  if (
    !url ||
    !['https:', 'http:'].includes(url.protocol) ||
    url.hash ||
    url.search ||
    url.username ||
    url.password ||
    url.href !== resource
  ) {
    throw new ApiError(
      'invalid_request',
      'the resource is an absolute http(s) URL, written as it is normalised, without credentials, query or fragment',
    );
  }
  if (!(await brokerExists(db, brokerId))) throw new ApiError('not_found', 'no broker of that id');
  const row = await insertResource(db, resource, brokerId);
  if (row?.broker_id !== brokerId) throw new ApiError('invalid_request', 'the resource is registered for another broker');
  return { resource: row.resource, brokerId: row.broker_id, createdAt: row.created_at.toISOString() };
}

/**
 * Whether a resource is registered, as every token request asks. A yes is remembered for
 * `rememberMs` (registrations are only ever added, so a yes stays true), in a map bounded in
 * entries; a no is never remembered, so a gateway registered a moment ago is taken at once.
 */
export function registeredResources(db: Database, options: { rememberMs: number; maxRemembered: number }) {
  const known = new Map<string, number>();
  return async (resource: string, now = Date.now()): Promise<boolean> => {
    if ((known.get(resource) ?? 0) > now) return true;
    known.delete(resource);
    if (!(await findResource(db, resource))) return false;
    if (known.size >= options.maxRemembered) known.delete(known.keys().next().value!);
    known.set(resource, now + options.rememberMs);
    return true;
  };
}
