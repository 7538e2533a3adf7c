import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { MAX_ANSWER_BYTES, UpstreamFailure, type Upstream } from '../upstream/upstream';
import { CodeHostConnector } from './connector';
import { TOOLS, toolNamed } from './tools';

/**
 * The built-in GitHub connector as an upstream (`upstream: {builtin: "github"}`): its tools are
 * listed like any MCP server's, and an allowed call becomes the REST request, with the
 * installation's token the agent never sees.
 */
export class GithubUpstream implements Upstream {
  constructor(
    private readonly connector: CodeHostConnector,
    readonly wantsCredential = false,
  ) {}

  static fromConfig(
    upstream: { apiUrl?: string; tokenEnv: string; credential: boolean },
    env: NodeJS.ProcessEnv = process.env,
    callTimeoutMs = 30_000,
  ): GithubUpstream {
    const apiUrl = upstream.apiUrl ?? 'https://api.github.com';
    const limits = { timeoutMs: callTimeoutMs, maxAnswerBytes: MAX_ANSWER_BYTES };
    // With minted credentials the gateway holds no token of its own: each call brings its own.
    if (upstream.credential) return new GithubUpstream(new CodeHostConnector(apiUrl, undefined, fetch, limits), true);
    const token = env[upstream.tokenEnv];
    if (!token) throw new Error(`set ${upstream.tokenEnv} (the GitHub connector's installation token)`);
    return new GithubUpstream(new CodeHostConnector(apiUrl, token, fetch, limits));
  }

  listTools(): Promise<Tool[]> {
    return Promise.resolve(TOOLS.map(({ name, description, inputSchema }) => ({ name, description, inputSchema })));
  }

  async callTool(name: string, args: Record<string, unknown>, credential?: string): Promise<CallToolResult> {
    const tool = toolNamed(name);
    if (!tool) throw new UpstreamFailure('tool_not_implemented', `the GitHub connector has no tool ${name}`);
    if (this.wantsCredential && !credential) throw new UpstreamFailure('credential_missing', 'the check minted no credential for it');
    const result = await this.connector.call(tool, args, credential);
    return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: { result } };
  }

  onToolsChanged(): void {
    // A fixed list: it never changes.
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
