import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';

/**
 * The most an upstream's answer may take, in bytes, whatever it is: the MCP SDK's bound on a stdio
 * message (10 MiB), given to the stdio upstream explicitly and to the GitHub connector's reads, so
 * one answer never costs the gateway more memory than that.
 */
export const MAX_ANSWER_BYTES = STDIO_DEFAULT_MAX_BUFFER_SIZE;

/**
 * What the gateway fronts: an MCP server of any kind, or the built-in GitHub connector. Every
 * agent session of the process shares one.
 */
export interface Upstream {
  /** The upstream's tools as it lists them (the gateway keeps only the mapped ones). */
  listTools(): Promise<Tool[]>;
  /** Whether each check should ask for a credential minted for the call (`credential: true`). */
  readonly wantsCredential?: boolean;
  /**
   * One allowed call, with the credential the check minted for it when `wantsCredential`. Throws
   * UpstreamFailure when no answer came; a tool's own error is a result.
   */
  callTool(name: string, args: Record<string, unknown>, credential?: string): Promise<CallToolResult>;
  /** Calls when the upstream's tool list changed, so the gateway compiles its schemas again. */
  onToolsChanged(listener: () => void): void;
  close(): Promise<void>;
}

/**
 * The upstream gave no usable answer: it crashed, timed out, closed, or answered something that is
 * not a tool result. `code` goes into the call trail as the failed outcome's `errorCode`; the
 * message never carries the call's arguments.
 */
export class UpstreamFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
    /** What the agent's refusal says (`structuredContent.reason`); the code itself by default. */
    readonly reason: string = code,
  ) {
    super(message);
    this.name = 'UpstreamFailure';
  }
}
