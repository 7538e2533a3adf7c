import type { ToolDefinition } from './tools';

/** The code-hosting API answered with an error: the call was made and failed. */
export class ConnectorError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
  ) {
    super(`the code host answered ${status} (${code})`);
  }
}

/**
 * The connector: turns an allowed tool call into the code-hosting API's HTTP request, with the
 * installation's token (which the agent never sees). Only ever called after the grant broker
 * allowed that exact call.
 */
export class CodeHostConnector {
  private readonly baseUrl: string;

  constructor(
    baseUrl: string,
    private readonly token: string,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
  }

  async call(tool: ToolDefinition, args: Record<string, unknown>): Promise<unknown> {
    const repo = String(args.repository)
      .split('/')
      .map((part) => encodeURIComponent(part))
      .join('/');
    switch (tool.name) {
      case 'repos.read_file': {
        const path = String(args.path).split('/').map(encodeURIComponent).join('/');
        const ref = encodeURIComponent(String(args.ref ?? 'refs/heads/main'));
        return this.request('GET', `/repos/${repo}/contents/${path}?ref=${ref}`);
      }
      case 'pulls.list':
        return this.request('GET', `/repos/${repo}/pulls?state=open`);
      case 'issues.create_comment':
        return this.request('POST', `/repos/${repo}/issues/${Number(args.issue)}/comments`, { body: String(args.body) });
      default:
        throw new ConnectorError(501, 'tool_not_implemented');
    }
  }

  private async request(method: string, path: string, body?: unknown): Promise<unknown> {
    const response = await this.fetchImpl(`${this.baseUrl}${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${this.token}`,
        Accept: 'application/json',
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const answer = (await response.json().catch(() => ({}))) as { code?: string };
    if (!response.ok) throw new ConnectorError(response.status, answer.code ?? `http_${response.status}`);
    return answer;
  }
}
