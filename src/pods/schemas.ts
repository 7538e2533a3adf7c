import { cursor, idParam, listLimit, timestamp, z } from '../kernel/schema';

export const RoleSchema = z.enum(['owner', 'admin', 'member']);

export const PodSchema = z.object({ id: z.string(), name: z.string(), createdBy: z.string(), createdAt: timestamp }).openapi('Pod');

export const MembershipPodSchema = PodSchema.extend({ role: RoleSchema.openapi({ description: "The caller's role in the pod" }) }).openapi(
  'MembershipPod',
  { description: 'A pod the caller is a member of, with their role there' },
);

export const ListPodsQuery = z.strictObject({ limit: listLimit(), cursor });

export const MemberSchema = z
  .object({
    podId: z.string(),
    memberId: z.string(),
    kind: z.enum(['human', 'agent']),
    role: RoleSchema,
    addedBy: z.string(),
    addedAt: timestamp,
  })
  .openapi('PodMember');

export const CreatePodBody = z.strictObject({ name: z.string().trim().min(1).max(200) }).openapi('CreatePod');

export const AddMemberBody = z
  .strictObject({
    userId: z
      .string()
      .min(1)
      .max(255)
      .refine((id) => !/^(agt|pod|grt|con|ins|brk|evt|rtk|btk|call)_/.test(id), 'a human user id (JWT sub), not a service id'),
    role: RoleSchema,
  })
  .openapi('AddMember', { description: 'Adds a human (a JWT subject). Agents join a pod by being installed.' });

export const PodParams = z.strictObject({ podId: idParam('pod_01jd0000000000000000000000') });
export const MemberParams = PodParams.extend({ userId: z.string().min(1).max(255) });
