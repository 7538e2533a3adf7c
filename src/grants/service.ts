import type { GrantsDeps } from './deps';
import { attenuateGrant } from './attenuate';
import { createGrant } from './create';
import { readGrantUsage } from './usage';
import { listGrantCalls, listPodGrants, readGrant } from './read';
import { revokeGrant } from './revoke';

/** Grants: create, read, list, attenuate, revoke with cascade, call trail. */
export function createGrantsService(deps: GrantsDeps) {
  return {
    create: createGrant.bind(null, deps),
    read: readGrant.bind(null, deps),
    listOfPod: listPodGrants.bind(null, deps),
    calls: listGrantCalls.bind(null, deps),
    usage: readGrantUsage.bind(null, deps),
    attenuate: attenuateGrant.bind(null, deps),
    revoke: revokeGrant.bind(null, deps),
  };
}

export type GrantsService = ReturnType<typeof createGrantsService>;
