import { createHash } from 'node:crypto';
import { ApiProblem, createClient } from '@grant-broker/client';

/** Who a request's bearer token stands for, once the grant broker vouched for it. */
export interface Bearer {
  /** The agent's seat (`agt_…`): sessions are counted per agent, whatever token or grant it uses. */
  agentId: string;
  grantId: string;
  /** The grant's tree (its root): sessions are counted per tree too, however deep an agent attenuates. */
  rootId: string;
  /** When the token itself stops being valid (an access token's `exp`): it is never remembered past it. */
  expiresAtMs?: number;
  /** An MCP host's access token (CONTRACT §20) rather than the agent's own runtime token. */
  oauth?: boolean;
}

/**
 * Why a bearer is refused: a token no kind accepts; a grant missing, unknown or other than the
 * token's; an access token whose grant has ended (revoked, expired); the authorization server not
 * yet known; the grant broker unreachable.
 */
export type Refusal =
  | 'bad_token'
  | 'grant_required'
  | 'grant_not_found'
  | 'grant_mismatch'
  | 'token_ended'
  | 'authorization_server_unknown'
  | 'broker_unavailable';
export type Identified = { ok: true; bearer: Bearer } | { ok: false; refusal: Refusal };

/**
 * A kind of bearer token the gateway accepts. Each kind recognizes its own tokens by their shape
 * (so a token is never tried against another kind's verifier) and asks the grant broker who they
 * stand for: an agent's runtime token with the grant in `Grant-Id` (below), and CONTRACT §20's
 * OAuth access tokens, verified locally and naming the grant they were issued for, no `Grant-Id`
 * needed (./access-tokens.ts). Anything no kind recognizes — a person's JWT
 * among them — is a 401 without a request to the broker.
 */
export interface BearerKind {
  recognizes(token: string): boolean;
  /** `grantId`: the request's `Grant-Id` header, unchecked. */
  identify(token: string, grantId: string | undefined): Promise<Identified>;
}

const GRANT_ID = /^[A-Za-z0-9_]{1,100}$/;

/**
 * An agent's runtime token (`art_…`, CONTRACT §6) on the grant its request names. The broker says
 * whose it is (`GET /api/agents/runtime/installations`, which takes an agent's runtime token and
 * nothing else: 401 unknown, 403 another kind of credential) and whether it may read the grant
 * (`GET /api/grants/:id` as the agent: 404 when not).
 */
export function runtimeTokens(brokerUrl: string, fetchImpl?: typeof fetch): BearerKind {
  return {
    recognizes: (token) => /^art_[0-9A-Za-z]{1,200}$/.test(token),
    async identify(token, grantId) {
      if (grantId === undefined || !GRANT_ID.test(grantId)) return { ok: false, refusal: 'grant_required' };
      // No retries: an agent waiting on its HTTP request is better told 503 than held.
      const asAgent = createClient({ baseUrl: brokerUrl, token, retries: 0, fetch: fetchImpl });
      const [installations, grant] = await Promise.allSettled([
        asAgent.unwrap(asAgent.api.GET('/api/agents/runtime/installations')),
        asAgent.unwrap(asAgent.api.GET('/api/grants/{grantId}', { params: { path: { grantId } } })),
      ]);
      if (installations.status === 'rejected') return { ok: false, refusal: refusalOf(installations.reason, 'bad_token') };
      if (grant.status === 'rejected') return { ok: false, refusal: refusalOf(grant.reason, 'grant_not_found') };
      const agentId = installations.value.items[0]?.agentId;
      if (!agentId) return { ok: false, refusal: 'bad_token' };
      return { ok: true, bearer: { agentId, grantId: grant.value.id, rootId: grant.value.rootId } };
    },
  };
}

/** 401 and 403 are the token's fault; 404 (and a malformed id) the grant's; anything else the broker's. */
function refusalOf(error: unknown, notFound: Refusal): Refusal {
  if (!(error instanceof ApiProblem)) return 'broker_unavailable';
  if (error.status === 401 || error.status === 403) return 'bad_token';
  if (error.status === 404 || error.status === 400 || error.status === 422) return notFound;
  return 'broker_unavailable';
}

/**
 * Whether a bearer token may act on a grant, and as whom, asked of the grant broker through the
 * kind that recognizes the token. A yes is remembered for `rememberMs` under the token's digest
 * (never the token), in a map bounded in entries, and asked again shortly before it runs out
 * without holding a request; a no is never remembered, so a fixed token works at once. Each check still verifies the token afresh (it is the check's `subjectToken`), so a
 * token revoked within `rememberMs` reaches the check and is refused there.
 */
export class AgentAuthenticator {
  private readonly verified = new Map<string, { bearer: Bearer; until: number }>();
  /** The grant broker's answers awaited, by the same key. */
  private readonly asking = new Map<string, Promise<Identified>>();

  constructor(
    private readonly kinds: readonly BearerKind[],
    private readonly options: { rememberMs: number; maxRemembered: number },
  ) {}

  async identify(token: string, grantId: string | undefined, now = Date.now()): Promise<Identified> {
    const kind = this.kinds.find((candidate) => candidate.recognizes(token));
    if (!kind) return { ok: false, refusal: 'bad_token' };
    const key = sessionOwner(token, grantId ?? '');
    const remembered = this.verified.get(key);
    if (remembered && remembered.until > now) {
      // In the last quarter of its time the yes is asked again off the request's path, so that a
      // steady agent's requests never wait for the grant broker (nor is a yes kept past `until`).
      if (remembered.until - now < this.options.rememberMs / 4) void this.ask(kind, token, grantId, key, now).catch(() => undefined);
      return { ok: true, bearer: remembered.bearer };
    }
    this.verified.delete(key);
    return this.ask(kind, token, grantId, key, now);
  }

  /** What was remembered of this token is dropped: its next request is identified afresh. */
  forget(token: string, grantId: string | undefined): void {
    const key = sessionOwner(token, grantId ?? '');
    this.verified.delete(key);
    // An answer already on its way no longer counts: it may predate what made this token forgotten.
    this.asking.delete(key);
  }

  /**
   * The grant broker asked once for a token and grant, however many requests wait for it (a burst
   * arriving as its yes runs out would otherwise each ask); its yes remembered, a no forgetting it.
   */
  private ask(kind: BearerKind, token: string, grantId: string | undefined, key: string, now: number): Promise<Identified> {
    const pending = this.asking.get(key);
    if (pending) return pending;
    const asked: Promise<Identified> = kind
      .identify(token, grantId)
      .then((identified) => {
        if (this.asking.get(key) !== asked) return identified;
        if (!identified.ok) {
          // A refusal of the token or grant ends a remembered yes at once; the broker unreachable does not.
          if (identified.refusal !== 'broker_unavailable') this.verified.delete(key);
          return identified;
        }
        this.verified.delete(key);
        if (this.verified.size >= this.options.maxRemembered) this.verified.delete(this.verified.keys().next().value!);
        const until = Math.min(now + this.options.rememberMs, identified.bearer.expiresAtMs ?? Infinity);
        this.verified.set(key, { bearer: identified.bearer, until });
        return identified;
      })
      .finally(() => {
        if (this.asking.get(key) === asked) this.asking.delete(key);
      });
    this.asking.set(key, asked);
    return asked;
  }
}

/** Who owns a session: the token's digest and the grant, so a session id alone is worth nothing. */
export const sessionOwner = (token: string, grantId: string) => `${createHash('sha256').update(token).digest('hex')}\u0000${grantId}`;
