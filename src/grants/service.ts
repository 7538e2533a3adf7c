import type { GrantsDeps } from './deps';
import { attenuateGrant } from './attenuate';
import { createGrant } from './create';
import { listPodGrants, readGrant } from './read';
import { revokeGrant } from './revoke';

/** Grants: create, read, list, attenuate, revoke with cascade. */
export function createGrantsService(deps: GrantsDeps) {
  return {
    create: createGrant.bind(null, deps),
    read: readGrant.bind(null, deps),
    listOfPod: listPodGrants.bind(null, deps),
    attenuate: attenuateGrant.bind(null, deps),
    revoke: revokeGrant.bind(null, deps),
  };
}

export type GrantsService = ReturnType<typeof createGrantsService>;
