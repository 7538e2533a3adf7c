import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { UrlElicitationRequiredError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ApiProblem, type GrantBrokerClient } from '@grant-broker/client';
import type { RefusalDetail } from './refusals';

export interface InBandLimits {
  /** Approvals one session watches at once (each a long poll); past it the host is still asked, but not told when it is decided. */
  maxWatchedPerSession: number;
  /** Approvals the whole gateway process watches at once. */
  maxWatched: number;
  /** One long poll of the grant broker: well under the gateway's broker timeout. */
  pollMs: number;
  /** Pause after a poll the grant broker did not answer. */
  retryMs: number;
}

const DEFAULTS: InBandLimits = { maxWatchedPerSession: 8, maxWatched: 1_000, pollMs: 4_000, retryMs: 1_000 };

/** Watches held across every session of this process (each session's watches are also bounded on their own). */
let watchedInProcess = 0;

/**
 * Approvals asked in band (CONTRACT §20, MCP 2025-11-25 URL mode elicitation). A `tools/call` the
 * grant broker holds for a human's approval cannot proceed until a person decides it, which is the
 * case the specification gives the URL elicitation required error (-32042) for: the host is told,
 * in the call's own answer, to open the approval's page in the console, and retries the call once
 * the person has decided. The gateway then watches the approval (long polls of the grant broker,
 * as this gateway's broker) and, once a person approved or denied it, sends the host
 * `notifications/elicitation/complete` for it, so a host that waits for that retries on its own.
 *
 * The elicitation's id is the approval's id: the retry is the identical call (agent, grant, tool,
 * arguments), which the grant broker recognizes as the one approved, and allows once. Nothing
 * about the call rides in the URL (the console page needs a person's sign-in, and who may decide is
 * the service's rule). A host that did not declare URL elicitation gets the tool error it always
 * did, with the approval's id and its console URL.
 */
export class ApprovalsInBand {
  /** Approvals asked of this host and not yet decided: the call each was asked for. */
  private readonly watching = new Map<string, { call: string; url: string }>();
  /** Calls whose approval a person denied, and that approval: the host's retry is told so, once. */
  private readonly denied = new Map<string, string>();
  private readonly limits: InBandLimits;
  /** Aborted when the session's transport closes: a long poll in flight ends with it. */
  private readonly closed = new AbortController();
  private closeHooked = false;

  constructor(
    private readonly server: Server,
    private readonly broker: GrantBrokerClient,
    limits: Partial<InBandLimits> = {},
  ) {
    this.limits = { ...DEFAULTS, ...limits };
  }

  /**
   * The approval a person denied for this very call (tool and arguments as this host sent them),
   * taken once: the retry a host makes when told the approval was decided is then answered
   * `approval_denied` by the grant broker, instead of asking a person afresh at once. A later
   * retry asks afresh, as any call without its approval does.
   */
  deniedApprovalOf(tool: string, args: Record<string, unknown>): string | undefined {
    // Nearly always none: the arguments are not serialized for a key nothing can match.
    if (this.denied.size === 0) return undefined;
    const key = callKey(tool, args);
    const approvalId = this.denied.get(key);
    this.denied.delete(key);
    return approvalId;
  }

  /**
   * A tool call's result as the host should get it: unchanged, or a -32042 error when it waits for
   * an approval the host can open: one just asked for, or (a retry before anyone decided) the one
   * this host was already asked to open for this very call.
   */
  answer(result: CallToolResult, tool: string, args: Record<string, unknown>): CallToolResult {
    const detail = result.structuredContent as RefusalDetail | undefined;
    if (!result.isError || !this.server.getClientCapabilities()?.elicitation?.url) return result;
    const call = callKey(tool, args);
    if (detail?.reason === 'approval_pending') {
      const waiting = [...this.watching].find(([, watched]) => watched.call === call);
      return waiting ? this.elicit(waiting[0], waiting[1].url) : result;
    }
    if (detail?.reason !== 'approval_required' || !detail.approvalId || !detail.consoleUrl) return result;
    this.hookClose();
    this.watch(detail.approvalId, call, detail.consoleUrl);
    return this.elicit(detail.approvalId, detail.consoleUrl);
  }

  private elicit(approvalId: string, url: string): never {
    throw new UrlElicitationRequiredError(
      [
        {
          mode: 'url',
          elicitationId: approvalId,
          url,
          message:
            'A person must approve this tool call on its page in the console. Once it is approved, ' +
            'call the tool again with exactly the same arguments: it runs once.',
        },
      ],
      `This call waits for a human's approval (${approvalId}).`,
    );
  }

  /** Once connected: the transport's close also aborts this session's polls (the SDK's own handler still runs). */
  private hookClose(): void {
    const transport = this.server.transport;
    if (this.closeHooked || !transport) return;
    this.closeHooked = true;
    const previous = transport.onclose;
    transport.onclose = () => {
      this.closed.abort();
      previous?.();
    };
  }

  private watch(approvalId: string, call: string, url: string): void {
    if (this.watching.has(approvalId)) return;
    if (this.watching.size >= this.limits.maxWatchedPerSession || watchedInProcess >= this.limits.maxWatched) return;
    this.watching.set(approvalId, { call, url });
    watchedInProcess += 1;
    void this.untilDecided(approvalId, call).finally(() => {
      this.watching.delete(approvalId);
      watchedInProcess -= 1;
    });
  }

  /** Long polls the approval while the session lives; tells the host once a person decided it. */
  private async untilDecided(approvalId: string, call: string): Promise<void> {
    while (this.connected()) {
      let state: string;
      try {
        state = (await this.broker.waitForApproval(approvalId, { timeoutMs: this.limits.pollMs, signal: this.closed.signal })).state;
      } catch (error) {
        // Not this broker's approval (or no longer there): nothing to wait for.
        if (error instanceof ApiProblem && error.status < 500) return;
        // The grant broker did not answer this poll: the host can still retry by hand; try again shortly.
        await new Promise((resolve) => setTimeout(resolve, this.limits.retryMs).unref());
        continue;
      }
      if (state === 'pending') continue;
      // Expired: nobody decided, so nothing was completed (the host's retry asks a person afresh).
      if (state === 'expired' || !this.connected()) return;
      if (state === 'denied') {
        this.denied.delete(call);
        if (this.denied.size >= this.limits.maxWatchedPerSession) this.denied.delete(this.denied.keys().next().value!);
        this.denied.set(call, approvalId);
      }
      await this.server
        .notification({ method: 'notifications/elicitation/complete', params: { elicitationId: approvalId } })
        .catch(() => undefined);
      return;
    }
  }

  private connected(): boolean {
    return !this.closed.signal.aborted && this.server.transport !== undefined;
  }
}

/**
 * A call as this host sent it. Not canonical: a retry that spells its arguments otherwise is simply
 * not recognized (it asks a person afresh), and the grant broker compares the arguments' digest
 * with the approval's whatever this says.
 */
const callKey = (tool: string, args: Record<string, unknown>) => `${tool}\u0000${JSON.stringify(args)}`;
