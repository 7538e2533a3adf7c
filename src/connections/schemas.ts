import { idParam, timestamp, z } from '../kernel/schema';

export const ToolName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/, 'letters, digits and . _ : / -, at most 128')
  .openapi({ example: 'repos.read_file' });

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

export const ConnectionToolSchema = z
  .strictObject({ name: ToolName, access: z.enum(['read', 'write']), resource: ToolResourceSchema.optional() })
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
    tools: z
      .array(ConnectionToolSchema)
      .min(1)
      .max(200)
      .refine((tools) => new Set(tools.map((t) => t.name)).size === tools.length, 'tool names must be unique'),
  })
  .openapi('CreateConnection');

export const UpdateConnectionBody = z.strictObject({ status: z.enum(['connected', 'disconnected']) }).openapi('UpdateConnection');

export const ConnectionParams = z.strictObject({ connectionId: idParam('con_01jd0000000000000000000000') });
