import type { TrailDeps } from './deps';
import { listGrantCalls } from './listing';
import { recordOutcome, recordOutcomes } from './outcome';
import { readGrantUsage } from './usage';

/** The call trail's surface: a grant's records and budget use, and a call's outcome. */
export function createTrailService(deps: TrailDeps) {
  return {
    callsOfGrant: listGrantCalls.bind(null, deps),
    usageOfGrant: readGrantUsage.bind(null, deps),
    recordOutcome: recordOutcome.bind(null, deps),
    recordOutcomes: recordOutcomes.bind(null, deps),
  };
}

export type TrailService = ReturnType<typeof createTrailService>;
