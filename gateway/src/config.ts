import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { isBareHost } from './allowed-hosts';

/** An RFC 6901 pointer into a call's arguments ("" would be the whole object, never a resource). */
const Pointer = z.string().regex(/^(\/([^~/]|~[01])*)+$/, 'must be a JSON pointer such as "/path"');
/** The tool names the grant broker accepts for a connection's tools. */
const GrantTool = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/, 'letters, digits and . _ : / -, at most 128');

/**
 * The folder a file-serving upstream serves, as it names it (server-filesystem's root): an absolute
 * path argument inside it is checked, and sent, as the path relative to it (./resource-paths.ts).
 */
const PathRoot = z
  .string()
  .refine(
    (root) =>
      root.startsWith('/') &&
      !/[\\\p{Cc}]/u.test(root) &&
      root
        .split('/')
        .slice(1, -1)
        .every((segment) => !['', '.', '..'].includes(segment)) &&
      !['.', '..'].includes(root.split('/').at(-1)!),
    'an absolute folder, without ".", ".." or empty segments',
  )
  .transform((root) => root.replace(/\/+$/, ''))
  .refine((root) => root !== '', 'a folder below /, not / itself');

const StdioUpstream = z.strictObject({
  command: z.string().min(1),
  args: z.array(z.string()).optional(),
  env: z.record(z.string(), z.string()).optional(),
  pathRoot: PathRoot.optional(),
});
const HttpUpstream = z.strictObject({
  url: z.url({ protocol: /^https?$/ }),
  headers: z.record(z.string(), z.string()).optional(),
  pathRoot: PathRoot.optional(),
});
const GithubUpstream = z.strictObject({
  builtin: z.literal('github'),
  /** The REST API's base URL; GitHub's own when absent. */
  apiUrl: z.url({ protocol: /^https?$/ }).optional(),
  /** The environment variable holding the installation's token (unused with `credential`). */
  tokenEnv: z.string().min(1).default('GITHUB_TOKEN'),
  /**
   * Ask each check for a token minted for exactly that call's repository and tool (the
   * connection's GitHub App), and send the call with it: no long-lived token in the gateway.
   */
  credential: z.boolean().default(false),
});

export const GatewayConfig = z.strictObject({
  brokerUrl: z.url({ protocol: /^https?$/ }),
  /** The environment variable holding this gateway's broker token (`bkt_…`): never in the file itself. */
  brokerTokenEnv: z.string().min(1),
  upstream: z.union([StdioUpstream, HttpUpstream, GithubUpstream], {
    error: 'must be {command, args?, env?}, {url, headers?} or {builtin: "github"}',
  }),
  tools: z
    .record(
      z.string().min(1),
      z.strictObject({
        grantTool: GrantTool,
        access: z.enum(['read', 'write']),
        resource: z.strictObject({ repository: Pointer.optional(), ref: Pointer.optional(), path: Pointer.optional() }).optional(),
        /** GitHub's installation permissions a minted token for this tool carries (`{contents: "read"}`). */
        permissions: z.record(z.string().regex(/^[a-z_]{1,100}$/), z.enum(['read', 'write'])).optional(),
      }),
    )
    .refine((tools) => Object.keys(tools).length > 0, 'name at least one upstream tool')
    .superRefine((tools, context) => {
      // One grant tool is one line of the connection: two upstream tools under one name would share
      // its access and resource pointers, and a grant of one would silently cover the other.
      const seen = new Map<string, string>();
      for (const [name, mapping] of Object.entries(tools)) {
        const first = seen.get(mapping.grantTool);
        if (first !== undefined)
          context.addIssue({
            code: 'custom',
            path: [name, 'grantTool'],
            message: `"${mapping.grantTool}" is already the grant tool of "${first}"`,
          });
        else seen.set(mapping.grantTool, name);
      }
    }),
  listen: z
    .strictObject({
      port: z.number().int().min(0).max(65535),
      host: z.string().min(1).default('127.0.0.1'),
      /** Where agents reach the gateway (`https://gateway.example.com/mcp`): its host is an allowed Host and Origin. */
      publicUrl: z.url({ protocol: /^https?$/ }).optional(),
      /** The Host and Origin names the gateway answers to; by default the listen address (every loopback name on loopback). */
      allowedHosts: z.array(z.string().refine(isBareHost, 'a host name or address, without port or path')).min(1).optional(),
      maxSessions: z.number().int().min(1).max(1_000_000).default(1_000),
      /** One agent's live sessions at most: its new one closes its least recently used. */
      maxSessionsPerAgent: z.number().int().min(1).max(1_000_000).default(32),
      /** Live sessions on one grant tree (a root grant and every grant attenuated below it) at most. */
      maxSessionsPerGrantTree: z.number().int().min(1).max(1_000_000).default(64),
    })
    .refine(
      (listen) => listen.allowedHosts !== undefined || listen.publicUrl !== undefined || !/^(0\.0\.0\.0|::|\[::\])$/.test(listen.host),
      {
        message: 'listening on every interface, name the hosts agents reach it by: publicUrl or allowedHosts',
        path: ['allowedHosts'],
      },
    )
    .optional(),
  /** How long an upstream tool call may take before it is abandoned and reported failed. */
  callTimeoutMs: z.number().int().min(1).max(600_000).default(30_000),
  /** How long one request to the grant broker may take; past it the call is not made (fail closed). */
  brokerTimeoutMs: z.number().int().min(1).max(60_000).default(10_000),
  /** How long a call's outcome waits for others to share one report to the grant broker. */
  outcomeBatchMs: z.number().int().min(0).max(10_000).default(20),
});
export type GatewayConfig = z.infer<typeof GatewayConfig>;
export type ToolMapping = GatewayConfig['tools'][string];

/** A configuration the gateway cannot run with: one line per problem, each naming its field. */
export class ConfigError extends Error {
  constructor(
    readonly source: string,
    readonly problems: string[],
  ) {
    super(`${source}:\n${problems.map((problem) => `  ${problem}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export function parseConfig(value: unknown, source = 'config'): GatewayConfig {
  const parsed = GatewayConfig.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new ConfigError(
    source,
    parsed.error.issues.map((issue) => `${fieldName(issue.path)}: ${issue.message}`),
  );
}

export function loadConfig(file: string): GatewayConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(file, [`cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`]);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(file, [`is not JSON: ${(error as Error).message}`]);
  }
  return parseConfig(json, file);
}

/** `tools["read_file"].resource.path`: the field as a user would write it in the file. */
function fieldName(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(the whole file)';
  return path
    .map((key, index) =>
      typeof key === 'number'
        ? `[${key}]`
        : /^[A-Za-z_$][\w$]*$/.test(String(key))
          ? `${index ? '.' : ''}${String(key)}`
          : `[${JSON.stringify(String(key))}]`,
    )
    .join('');
}

/** The `tools` of `POST /api/connections` for the connection this gateway checks against. */
export function connectionTools(config: GatewayConfig) {
  return Object.values(config.tools).map(({ grantTool, access, resource, permissions }) => ({
    name: grantTool,
    access,
    ...(resource ? { resource } : {}),
    ...(permissions ? { permissions } : {}),
  }));
}
