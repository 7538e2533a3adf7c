import type { Database } from '../db/database';
import { ApiError } from '../kernel/errors';
import { brokerExists, insertResource } from './repository';

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
