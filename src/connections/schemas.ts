import { GITHUB_APP_PERMISSIONS } from '../github-apps/permission-names';
import { cursor, idParam, listLimit, timestamp, ToolName, z } from '../kernel/schema';

/** An RFC 6901 JSON pointer into a call's `args`: `/owner_repo`, `/ref`, `/files/0/path`. */
const ArgsPointer = z
  .string()
  .max(256)
  .regex(/^(\/([^~/]|~[01])*)+$/, 'an RFC 6901 JSON pointer such as /repository')
  .openapi({ example: '/repository' });

export const ToolResourceSchema = z
  .strictObject({ repository: ArgsPointer.optional(), ref: ArgsPointer.optional(), path: ArgsPointer.optional() })
  .refine((resource) => Object.values(resource).some((pointer) => pointer !== undefined), 'name at least one of repository, ref, path')
  .openapi('ToolResource', {
    description: "Where the call's repository, ref and path sit in its `args`; checked against grants' `resources`.",
  });

const permissionNames = Object.keys(GITHUB_APP_PERMISSIONS) as [
  keyof typeof GITHUB_APP_PERMISSIONS,
  ...Array<keyof typeof GITHUB_APP_PERMISSIONS>,
];

/** GitHub's installation permissions, by GitHub's own names and levels (from its OpenAPI description). */
export const ToolPermissionsSchema = z
  .partialRecord(z.enum(permissionNames), z.enum(['read', 'write', 'admin']))
  .superRefine((permissions, ctx) => {
    for (const [name, level] of Object.entries(permissions)) {
      const levels: readonly string[] = GITHUB_APP_PERMISSIONS[name as keyof typeof GITHUB_APP_PERMISSIONS];
      if (!levels.includes(level))
        ctx.addIssue({ code: 'custom', path: [name], message: `GitHub grants ${name} only as ${levels.join(' or ')}` });
    }
  })
  .refine((permissions) => Object.keys(permissions).length > 0, 'name at least one permission')
  .openapi('ToolPermissions', {
    description: "The GitHub App installation permissions a token minted for this tool's calls carries, e.g. `{contents: read}`.",
    example: { contents: 'read' },
  });

export const ConnectionToolSchema = z
  .strictObject({
    name: ToolName,
    access: z.enum(['read', 'write']),
    resource: ToolResourceSchema.optional(),
    permissions: ToolPermissionsSchema.optional(),
  })
  // A read tool's token reads: a permission above `read` would let its calls write.
  .refine((tool) => tool.access === 'write' || Object.values(tool.permissions ?? {}).every((level) => level === 'read'), {
    message: 'a read tool may declare only read permissions',
    path: ['permissions'],
  })
  .openapi('ConnectionTool');

export const ConnectionSchema = z
  .object({
    id: z.string(),
    kind: z.string(),
    status: z.enum(['connected', 'disconnected']),
    ownerId: z.string(),
    brokerId: z.string(),
    installationId: z.string(),
    externalInstallationId: z.string(),
    app: z.string().nullable().openapi({ description: 'The GitHub App its calls mint tokens through, or null' }),
    tools: z.array(ConnectionToolSchema),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .openapi('Connection');

export const CreateConnectionBody = z
  .strictObject({
    kind: z
      .string()
      .regex(/^[a-z][a-z0-9_]{0,63}$/)
      .openapi({ example: 'code_hosting_app' }),
    brokerId: idParam('brk_01jd0000000000000000000000'),
    externalInstallationId: z.string().min(1).max(200),
    app: z.string().min(1).max(64).optional().openapi({
      description:
        'A GitHub App configured by the operator (GITHUB_APPS): the installation must be bound to the caller, and its id is then digits',
    }),
    tools: z
      .array(ConnectionToolSchema)
      .min(1)
      .max(200)
      .refine((tools) => new Set(tools.map((t) => t.name)).size === tools.length, 'tool names must be unique'),
  })
  .refine((body) => body.app === undefined || /^[1-9][0-9]{0,19}$/.test(body.externalInstallationId), {
    message: "an app installation's id is GitHub's, in digits",
    path: ['externalInstallationId'],
  })
  .openapi('CreateConnection');

export const UpdateConnectionBody = z.strictObject({ status: z.enum(['connected', 'disconnected']) }).openapi('UpdateConnection');

export const ConnectionParams = z.strictObject({ connectionId: idParam('con_01jd0000000000000000000000') });

export const ListConnectionsQuery = z.strictObject({ limit: listLimit(), cursor });
