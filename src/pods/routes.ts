import { defineRoute, type CredentialAuthenticators, type Route } from '../kernel/route';
import { page } from '../kernel/schema';
import { presentMember, presentPod } from './presenters';
import {
  AddMemberBody,
  CreatePodBody,
  ListPodsQuery,
  MemberParams,
  MemberSchema,
  MembershipPodSchema,
  PodParams,
  PodSchema,
} from './schemas';
import type { PodsService } from './service';

const tag = 'Pods';

export function podRoutes(pods: PodsService, auth: CredentialAuthenticators): Route[] {
  const human = auth.credentials('human');
  return [
    defineRoute(
      {
        method: 'post',
        path: '/api/pods',
        operationId: 'createPod',
        tag,
        summary: 'Create a pod; the caller becomes its owner',
        auth: human,
        body: CreatePodBody,
        success: { status: 201, description: 'The new pod', schema: PodSchema },
      },
      async ({ principal, body }) => ({ body: presentPod(await pods.create(principal, body.name)) }),
    ),
    defineRoute(
      {
        method: 'get',
        path: '/api/pods',
        operationId: 'listPods',
        tag,
        summary: 'List the pods the caller is a member of, with their role in each',
        description:
          "A person's memberships only (an installed agent lists its pods at `/api/agents/runtime/pods`). Newest pod first; " +
          'nobody sees a pod they are not in.',
        auth: human,
        query: ListPodsQuery,
        success: { status: 200, description: "The caller's pods, newest first", schema: page(MembershipPodSchema) },
      },
      async ({ principal, query }) => ({ body: await pods.listOfCaller(principal, query) }),
    ),
    defineRoute(
      {
        method: 'get',
        path: '/api/pods/:podId',
        operationId: 'getPod',
        tag,
        summary: 'Read a pod (members only)',
        auth: human,
        params: PodParams,
        success: { status: 200, description: 'The pod', schema: PodSchema },
      },
      async ({ principal, params }) => ({ body: presentPod(await pods.read(principal, params.podId)) }),
    ),
    defineRoute(
      {
        method: 'get',
        path: '/api/pods/:podId/members',
        operationId: 'listPodMembers',
        tag,
        summary: 'List the members of a pod, humans and installed agents',
        auth: human,
        params: PodParams,
        success: { status: 200, description: 'Every member, oldest first', schema: page(MemberSchema) },
      },
      async ({ principal, params }) => {
        const members = await pods.members(principal, params.podId);
        return { body: { items: members.map(presentMember), nextCursor: null } };
      },
    ),
    defineRoute(
      {
        method: 'post',
        path: '/api/pods/:podId/members',
        operationId: 'addPodMember',
        tag,
        summary: 'Add a human member (owners and admins; only owners add owners)',
        auth: human,
        params: PodParams,
        body: AddMemberBody,
        success: { status: 201, description: 'The new membership', schema: MemberSchema },
        errors: ['not_pod_admin', 'owner_role_required', 'member_exists'],
      },
      async ({ principal, params, body }) => ({
        body: presentMember(await pods.addMember(principal, params.podId, body.userId, body.role)),
      }),
    ),
    defineRoute(
      {
        method: 'delete',
        path: '/api/pods/:podId/members/:userId',
        operationId: 'removePodMember',
        tag,
        summary: 'Remove a human member; their pod-grant audience ends at once',
        auth: human,
        params: MemberParams,
        success: { status: 204, description: 'Removed' },
        errors: ['not_pod_admin', 'owner_role_required', 'last_owner', 'invalidation_pending'],
      },
      async ({ principal, params }) => {
        await pods.removeMember(principal, params.podId, params.userId);
        return { status: 204 };
      },
    ),
  ];
}
