import { credentials } from '../http/auth';
import { defineRoute, type Route } from '../http/route';
import { page } from '../http/schema';
import { authorizePodAction } from './access';
import { presentMember, presentPod } from './presenters';
import { listMembers } from './repository';
import { AddMemberBody, CreatePodBody, MemberParams, MemberSchema, PodParams, PodSchema } from './schemas';
import { addMember, createPod, removeMember } from './service';

const tag = 'Pods';

export const podRoutes: Route[] = [
  defineRoute(
    {
      method: 'post',
      path: '/api/pods',
      tag,
      summary: 'Create a pod; the caller becomes its owner',
      auth: credentials('human'),
      body: CreatePodBody,
      success: { status: 201, description: 'The new pod', schema: PodSchema },
    },
    async ({ deps, principal, body }) => ({ body: presentPod(await createPod(deps, principal, body.name)) }),
  ),
  defineRoute(
    {
      method: 'get',
      path: '/api/pods/:podId',
      tag,
      summary: 'Read a pod (members only)',
      auth: credentials('human'),
      params: PodParams,
      success: { status: 200, description: 'The pod', schema: PodSchema },
    },
    async ({ deps, principal, params }) => ({
      body: presentPod(await authorizePodAction(deps, principal, params.podId, 'pod.read')),
    }),
  ),
  defineRoute(
    {
      method: 'get',
      path: '/api/pods/:podId/members',
      tag,
      summary: 'List the members of a pod, humans and installed agents',
      auth: credentials('human'),
      params: PodParams,
      success: { status: 200, description: 'Every member, oldest first', schema: page(MemberSchema) },
    },
    async ({ deps, principal, params }) => {
      await authorizePodAction(deps, principal, params.podId, 'members.list');
      const members = await listMembers(deps.db, params.podId);
      return { body: { items: members.map(presentMember), nextCursor: null } };
    },
  ),
  defineRoute(
    {
      method: 'post',
      path: '/api/pods/:podId/members',
      tag,
      summary: 'Add a human member (owners and admins; only owners add owners)',
      auth: credentials('human'),
      params: PodParams,
      body: AddMemberBody,
      success: { status: 201, description: 'The new membership', schema: MemberSchema },
      errors: ['not_pod_admin', 'owner_role_required', 'member_exists'],
    },
    async ({ deps, principal, params, body }) => ({
      body: presentMember(await addMember(deps, principal, params.podId, body.userId, body.role)),
    }),
  ),
  defineRoute(
    {
      method: 'delete',
      path: '/api/pods/:podId/members/:userId',
      tag,
      summary: 'Remove a human member; their pod-grant audience ends at once',
      auth: credentials('human'),
      params: MemberParams,
      success: { status: 204, description: 'Removed' },
      errors: ['not_pod_admin', 'owner_role_required', 'last_owner'],
    },
    async ({ deps, principal, params }) => {
      await removeMember(deps, principal, params.podId, params.userId);
      return { status: 204 };
    },
  ),
];

