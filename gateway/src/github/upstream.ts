import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { UpstreamFailure, type Upstream } from '../upstream/upstream';
import { CodeHostConnector } from './connector';
import { TOOLS, toolNamed } from './tools';

/**
 * The built-in GitHub connector as an upstream (`upstream: {builtin: "github"}`): its tools are
 * listed like any MCP server's, and an allowed call becomes the REST request, with the
 * installation's token the agent never sees.
 */
export class GithubUpstream implements Upstream {
  constructor(private readonly connector: CodeHostConnector) {}

  static fromEnvironment(apiUrl: string | undefined, tokenEnv: string, env: NodeJS.ProcessEnv = process.env): GithubUpstream {
    const token = env[tokenEnv];
    if (!token) throw new Error(`set ${tokenEnv} (the GitHub connector's installation token)`);
    return new GithubUpstream(new CodeHostConnector(apiUrl ?? 'https://api.github.com', token));
  }

  listTools(): Promise<Tool[]> {
    return Promise.resolve(TOOLS.map(({ name, description, inputSchema }) => ({ name, description, inputSchema })));
  }

  async callTool(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    const tool = toolNamed(name);
    if (!tool) throw new UpstreamFailure('tool_not_implemented', `the GitHub connector has no tool ${name}`);
    const result = await this.connector.call(tool, args);
    return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: { result } };
  }

  onToolsChanged(): void {
    // A fixed list: it never changes.
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
