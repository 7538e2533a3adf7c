import type { PodsDeps } from './deps';
import { authorizePodAction } from './access';
import { listPodsOfCaller } from './list';
import { addMember, createPod, listPodMembers, removeMember } from './membership';

/** Pods and their members; `authorize` is how other domains ask `pods/access`. */
export function createPodsService(deps: PodsDeps) {
  return {
    create: createPod.bind(null, deps),
    listOfCaller: listPodsOfCaller.bind(null, deps),
    read: (caller: Parameters<typeof authorizePodAction>[1], podId: string) => authorizePodAction(deps, caller, podId, 'pod.read'),
    members: listPodMembers.bind(null, deps),
    addMember: addMember.bind(null, deps),
    removeMember: removeMember.bind(null, deps),
    authorize: authorizePodAction.bind(null, deps),
  };
}

export type PodsService = ReturnType<typeof createPodsService>;
