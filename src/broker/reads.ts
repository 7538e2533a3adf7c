import jwt from 'jsonwebtoken';
import type { ApprovalBinding } from '../kernel/decisions/approvals';
import type { TreeSession } from '../budget/sliding-window';
import type { CredentialResolver } from '../credentials/authenticators';
import type { Database } from '../db/database';
import { unauthenticated } from '../credentials/authenticators';
import type { ChainLink, DecisionInput, decisions } from '../kernel/decisions/catalogue';
import type { BrokerPrincipal, CallPrincipal } from '../kernel/principals';
import { readTreeFacts, runtimeTokenExpiry } from './repository';
import type { Chain, MutableFacts } from './tree-facts';

export type { Chain, FixedLink } from './tree-facts';

/** The approval a re-sent check brings, as broker/check reads it. */
export type ApprovalFact = NonNullable<DecisionInput<typeof decisions.brokerCheck>['approval']>;

/** The broker asking, as the check's authenticator found it. */
export type CheckingBroker = BrokerPrincipal & {
  /** True when the token came from this replica's memory and was not looked up for this request. */
  remembered: boolean;
};

/**
 * What the broker check reads, as one interface: its plain version (below) reads the
 * repositories, Redis and the credential look-ups every time; src/speedups/caches.ts decorates
 * this same interface with the replica's caches. The check's stages only ever see this.
 */
export interface CheckReads {
  /** The grant's chain, the grant first, its root last; null for no such grant. */
  chainOf(grantId: string): Promise<Chain | null>;
  /** The approval a re-sent check brings. */
  approvalOf(approvalId: string): Promise<ApprovalFact>;
  /** The open approval of the identical call, for a check that needs one and brings none (never remembered: it changes). */
  openApprovalOf(call: ApprovalBinding): Promise<ApprovalFact | undefined>;
  /** A broker token taken from memory is still live right now; else the request's 401. */
  confirmBroker(broker: CheckingBroker): Promise<void>;
  /**
   * The tree whose root this is, at its current version (read before any of its facts, so every
   * fact read through it is at least as fresh), or at `known`: a version and session the budget
   * script just reported.
   */
  treeAt(rootId: string, nowMs: number, known?: TreeState): Promise<TreeReads>;
  /** Where a tool's credential comes from; null: nowhere. */
  credentialSourceOf(connectionId: string, tool: string): Promise<CredentialSource | null>;
}

/** Reads of one tree, each at least as fresh as `version`. */
export interface TreeReads {
  readonly version: string;
  /** The tree's session as of `version`: what the decision reads of its earlier calls. */
  readonly session: TreeSession;
  /** A broker token taken from memory is still live (a revocation of its tokens moves the version). */
  confirmBroker(broker: CheckingBroker): Promise<void>;
  /** Who a forwarded subject token is for, until when; null when it does not verify (unknown, expired, deleted). */
  subjectOf(token: string, nowMs: number): Promise<VerifiedSubject | null>;
  /** What can change about the chain for this principal. */
  factsOf(chain: Chain, principal: CallPrincipal): Promise<MutableFacts>;
}

export interface TreeState {
  version: string;
  session: TreeSession;
}

export interface CredentialSource {
  app: string;
  installationId: string;
  permissions: Record<string, string> | null;
}

/** A `bkt_` token's broker as the check's authenticator finds it. */
export interface BrokerTokenReads {
  /** The broker of a live token; `remembered` when the answer came from memory, to be confirmed later. */
  byHash(tokenHash: string, nowMs: number): Promise<{ brokerId: string; remembered: boolean } | null>;
  /** The database's answer now (what memory holds of the token follows it). */
  confirm(tokenHash: string, nowMs: number): Promise<string | null>;
}

/** Where the plain reads read: the repositories and look-ups of other domains, as ports composition.ts fills. */
export interface CheckSources {
  db: Database;
  clock: { now(): number };
  /** The grants domain's chain of a grant (one recursive query); empty for no such grant. */
  chainLinks(grantId: string): Promise<ChainLink[]>;
  approvalOf(approvalId: string): Promise<ApprovalFact>;
  openApprovalOf(call: ApprovalBinding): Promise<ApprovalFact | undefined>;
  /** The broker of a live token by its SHA-256 (credentials). */
  brokerOfToken(tokenHash: string): Promise<string | null>;
  /** The tree's version and session in Redis, its windows rebuilt first when Redis lost them. */
  treeState(rootId: string): Promise<TreeState>;
  /** Verifies any bearer credential, as the API's own authenticators do. */
  resolveCredential: CredentialResolver;
  /**
   * An MCP host's OAuth access token (CONTRACT §20), verified against the authorization server's
   * own keys: undefined when the token is not one, null when it is one that does not verify.
   */
  verifyAccessToken(token: string): Promise<AccessTokenSubject | null | undefined>;
  credentialSourceOf(connectionId: string, tool: string): Promise<CredentialSource | null>;
}

/** The broker token look-up without memory: Postgres, every time. */
export function plainBrokerTokens(sources: Pick<CheckSources, 'brokerOfToken'>): BrokerTokenReads {
  return {
    async byHash(tokenHash) {
      const brokerId = await sources.brokerOfToken(tokenHash);
      return brokerId ? { brokerId, remembered: false } : null;
    },
    confirm: (tokenHash) => sources.brokerOfToken(tokenHash),
  };
}

/** The check's reads without any memory: every read goes to the repositories, Redis or the look-ups. */
export function plainCheckReads(sources: CheckSources, tokens: BrokerTokenReads): CheckReads {
  const confirmBroker = async (broker: CheckingBroker) => {
    if (broker.remembered && !(await tokens.confirm(broker.tokenHash, sources.clock.now()))) throw unauthenticated();
  };
  return {
    async chainOf(grantId) {
      const links = await sources.chainLinks(grantId);
      // `revoked` is left out: it is the one mutable fact, read with the tree's others.
      return links.length === 0 ? null : links.map(({ revoked: _mutable, ...fixed }) => fixed);
    },
    approvalOf: (approvalId) => sources.approvalOf(approvalId),
    openApprovalOf: (call) => sources.openApprovalOf(call),
    confirmBroker,
    async treeAt(rootId, _nowMs, known) {
      const state = known ?? (await sources.treeState(rootId));
      return {
        version: state.version,
        session: state.session,
        confirmBroker,
        subjectOf: async (token, nowMs) => (await verifySubject(sources, token, nowMs)) ?? null,
        factsOf: (chain, principal) => treeFactsOf(sources.db, chain, principal),
      };
    },
    credentialSourceOf: (connectionId, tool) => sources.credentialSourceOf(connectionId, tool),
  };
}

/** What an access token stands for: an agent on the one grant a consent made for its host. */
export interface AccessTokenSubject {
  agentId: string;
  grantId: string;
  expiresAtMs: number;
}

/** A verified subject, with the time its token stops being valid (null: never). */
export interface VerifiedSubject {
  principal: CallPrincipal;
  expiresAtMs: number | null;
  /** The one grant the token is good for (an access token's); absent: any grant its principal may use. */
  grantId?: string;
}

/**
 * The forwarded subject token, verified (so a broker cannot act for an identity it does not
 * hold), with the time it stops being valid; undefined when it is unknown, expired, deleted or
 * a broker token: nobody to check the call for. Whether an asserted principal, or none, may go
 * on is the policy's call.
 */
export async function verifySubject(sources: CheckSources, token: string, nowMs: number): Promise<VerifiedSubject | undefined> {
  const access = await sources.verifyAccessToken(token);
  // One of the authorization server's tokens is that or nothing: never tried as a person's JWT.
  if (access !== undefined) {
    return access
      ? { principal: { kind: 'agent', id: access.agentId }, expiresAtMs: access.expiresAtMs, grantId: access.grantId }
      : undefined;
  }
  const verified = await sources.resolveCredential(token);
  if (verified?.kind === 'human') {
    return { principal: { kind: 'user', id: verified.userId }, expiresAtMs: jwtExpiryMs(token) ?? nowMs };
  }
  if (verified?.kind === 'agent') {
    return { principal: { kind: 'agent', id: verified.agentId }, expiresAtMs: await runtimeTokenExpiry(sources.db, verified.tokenId) };
  }
  return undefined;
}

/** The tree's mutable facts for a principal, in one round trip (the check's read model). */
export function treeFactsOf(db: Database, chain: Chain, principal: CallPrincipal): Promise<MutableFacts> {
  return readTreeFacts(db, { chain, principal, podIds: podsOf(chain) });
}

/** The distinct pods of the chain's targets. */
export function podsOf(chain: Chain): string[] {
  return [...new Set(chain.map((link) => link.target.pod_id))];
}

/** The `exp` of a JWT the resolver has verified, in milliseconds. */
function jwtExpiryMs(token: string): number | undefined {
  const claims = jwt.decode(token) as { exp?: unknown } | null;
  return typeof claims?.exp === 'number' ? claims.exp * 1000 : undefined;
}
