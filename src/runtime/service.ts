import type { RuntimeDeps } from './deps';
import { installationsOf, podContext, podsOf } from './context';
import { ackEvent, pollEvents } from './events';

/** The installed agent's surface: installations, pods, context, events. */
export function createRuntimeService(deps: RuntimeDeps) {
  return {
    installations: installationsOf.bind(null, deps),
    pods: podsOf.bind(null, deps),
    context: podContext.bind(null, deps),
    poll: pollEvents.bind(null, deps),
    ack: ackEvent.bind(null, deps),
  };
}

export type RuntimeService = ReturnType<typeof createRuntimeService>;
