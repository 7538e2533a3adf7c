import { MAX_ANSWER_BYTES, UpstreamFailure } from '../upstream/upstream';
import type { ToolDefinition } from './tools';

/** The code-hosting API answered with an error: the call was made and failed. */
export class ConnectorError extends UpstreamFailure {
  constructor(
    readonly status: number,
    code: string,
  ) {
    super(code, `the code host answered ${status} (${code})`, 'connector_error');
  }
}

/**
 * The connector would not send the call: an argument cannot be made into the request's URL as it
 * is (a URL parser collapses `.` and `..` segments and empty ones change the path, so the request
 * would name another file or repository than the one the grant broker allowed). Nothing was sent.
 * The message names the argument and the rule, never its value.
 */
export class UnsendableCall extends UpstreamFailure {
  constructor(problem: string) {
    // The code is the `errorCode` the SDK's withCheck reports with the failed outcome, into the call trail.
    super('invalid_arguments', `the connector would not send it: ${problem}`);
  }
}

/** How long one request may take, body included, and how many bytes its answer may hold. */
export interface ConnectorLimits {
  timeoutMs: number;
  maxAnswerBytes: number;
}

const DEFAULT_LIMITS: ConnectorLimits = { timeoutMs: 10_000, maxAnswerBytes: MAX_ANSWER_BYTES };

/**
 * The connector: turns an allowed tool call into the code-hosting API's HTTP request, with the
 * installation's token (which the agent never sees). Only ever called after the grant broker
 * allowed that exact call; it still refuses arguments that would not make exactly the URL the
 * check was about, whatever the broker answered. What it reads back is bounded in time (the
 * gateway's `callTimeoutMs`, the body included) and in bytes (`MAX_ANSWER_BYTES`), and an answer
 * that is not JSON is a failure, never an empty success.
 */
export class CodeHostConnector {
  private readonly baseUrl: string;

  constructor(
    baseUrl: string,
    /** The installation's token; undefined when every call brings a token minted for it. */
    private readonly token: string | undefined,
    private readonly fetchImpl: typeof fetch = fetch,
    private readonly limits: ConnectorLimits = DEFAULT_LIMITS,
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
  }

  /** The call as the code host's request, with `credential` (minted for this call) or else the installation's token. */
  async call(tool: ToolDefinition, args: Record<string, unknown>, credential?: string): Promise<unknown> {
    const token = credential ?? this.token;
    if (!token) throw new UpstreamFailure('credential_missing', 'no token to send it with');
    const repository = stringArgument(args, 'repository').split('/');
    if (repository.length !== 2) throw new UnsendableCall('repository must be owner/name');
    const repo = urlPath('repository', repository);
    switch (tool.name) {
      case 'repos.read_file': {
        const path = urlPath('path', stringArgument(args, 'path').split('/'));
        const ref = encodeURIComponent(args.ref === undefined ? 'refs/heads/main' : stringArgument(args, 'ref'));
        return this.request(token, 'GET', `/repos/${repo}/contents/${path}?ref=${ref}`);
      }
      case 'pulls.list':
        return this.request(token, 'GET', `/repos/${repo}/pulls?state=open`);
      case 'issues.create_comment': {
        const issue = args.issue;
        // Number() of anything else could make `NaN`, `Infinity` or `1e+300` a path segment.
        if (typeof issue !== 'number' || !Number.isSafeInteger(issue) || issue < 1)
          throw new UnsendableCall('issue must be a positive safe integer');
        return this.request(token, 'POST', `/repos/${repo}/issues/${issue}/comments`, { body: stringArgument(args, 'body') });
      }
      default:
        throw new ConnectorError(501, 'tool_not_implemented');
    }
  }

  private async request(token: string, method: string, path: string, body?: unknown): Promise<unknown> {
    const { timeoutMs, maxAnswerBytes } = this.limits;
    let status: number;
    let text: string;
    try {
      // One deadline for the headers and the whole body: a code host that trickles is cut off too.
      const response = await this.fetchImpl(`${this.baseUrl}${path}`, {
        method,
        headers: {
          Authorization: `Bearer ${token}`,
          Accept: 'application/json',
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      status = response.status;
      text = await boundedText(response, maxAnswerBytes);
    } catch (error) {
      if (error instanceof UpstreamFailure) throw error;
      if ((error as Error).name === 'TimeoutError')
        throw new UpstreamFailure('upstream_timeout', `the code host did not answer within ${timeoutMs} ms`);
      throw new UpstreamFailure('upstream_unavailable', 'the code host could not be reached');
    }
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      if (status < 200 || status > 299) throw new ConnectorError(status, `http_${status}`);
      throw new UpstreamFailure('upstream_invalid_answer', "the code host's answer was not JSON");
    }
    if (status < 200 || status > 299) {
      const code = (answer as { code?: unknown } | null)?.code;
      throw new ConnectorError(status, typeof code === 'string' && /^[a-z0-9_]{1,64}$/.test(code) ? code : `http_${status}`);
    }
    return answer;
  }
}

/**
 * The body as text, read no further than `maxBytes`: a larger answer (declared or streamed) is
 * abandoned at once, its connection closed, rather than held in memory whole.
 */
async function boundedText(response: Response, maxBytes: number): Promise<string> {
  const tooLarge = () => new UpstreamFailure('upstream_too_large', `the code host's answer is larger than ${maxBytes} bytes`);
  if (Number(response.headers.get('content-length') ?? 0) > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw tooLarge();
  }
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function stringArgument(args: Record<string, unknown>, name: string): string {
  const value = args[name];
  if (typeof value !== 'string') throw new UnsendableCall(`${name} must be a string`);
  return value;
}

/**
 * Segments joined into one URL path, each percent-encoded so that `/`, `?`, `#`, `%` and spaces
 * inside a segment stay data. `.`, `..` and empty segments are refused rather than encoded:
 * encodeURIComponent leaves them as they are, and the URL parser would then resolve them.
 */
function urlPath(argument: string, segments: string[]): string {
  if (segments.some((segment) => segment === '' || segment === '.' || segment === '..'))
    throw new UnsendableCall(`${argument} has an empty, "." or ".." segment`);
  return segments.map(encodeURIComponent).join('/');
}
