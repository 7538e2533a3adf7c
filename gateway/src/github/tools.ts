/**
 * The built-in GitHub connector's tools. One list serves three readers: the agent sees
 * `description` and `inputSchema` (through the gateway, which also validates arguments against it);
 * the connection is registered with `access` and `resource` (the JSON pointers into the arguments
 * where the repository, ref and path sit), so the grant broker can hold each call to the grant's
 * repositories; the connector maps a call to its HTTP request.
 */
export interface ToolDefinition {
  name: string;
  description: string;
  access: 'read' | 'write';
  resource: { repository?: string; ref?: string; path?: string };
  inputSchema: { type: 'object'; properties: Record<string, object>; required: string[]; additionalProperties: false };
}

const repository = { type: 'string', description: 'owner/name, e.g. acme/api', pattern: '^[\\w.-]+/[\\w.-]+$' };

export const TOOLS: readonly ToolDefinition[] = [
  {
    name: 'repos.read_file',
    description: 'Read a file of a repository at a ref (default: the default branch).',
    access: 'read',
    resource: { repository: '/repository', ref: '/ref', path: '/path' },
    inputSchema: {
      type: 'object',
      properties: { repository, path: { type: 'string', minLength: 1 }, ref: { type: 'string', default: 'refs/heads/main' } },
      required: ['repository', 'path'],
      additionalProperties: false,
    },
  },
  {
    name: 'pulls.list',
    description: 'List the open pull requests of a repository.',
    access: 'read',
    resource: { repository: '/repository' },
    inputSchema: { type: 'object', properties: { repository }, required: ['repository'], additionalProperties: false },
  },
  {
    name: 'issues.create_comment',
    description: 'Comment on an issue or pull request.',
    access: 'write',
    resource: { repository: '/repository' },
    inputSchema: {
      type: 'object',
      properties: {
        repository,
        issue: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
        body: { type: 'string', minLength: 1, maxLength: 65536 },
      },
      required: ['repository', 'issue', 'body'],
      additionalProperties: false,
    },
  },
];

/** The `tools` of `POST /api/connections` for this connector. */
export const connectionTools = () => TOOLS.map(({ name, access, resource }) => ({ name, access, resource }));

export const toolNamed = (name: string) => TOOLS.find((tool) => tool.name === name);

/** The gateway's `tools` for this connector: each tool under its own name as the grant's tool. */
export const githubToolMappings = () =>
  Object.fromEntries(TOOLS.map(({ name, access, resource }) => [name, { grantTool: name, access, resource }]));
