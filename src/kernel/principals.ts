/**
 * Who calls the API, once a credential is verified, and who a tool call is made for.
 */
export type CredentialKind = 'human' | 'agent' | 'broker';

export type HumanPrincipal = { kind: 'human'; userId: string };
export type AgentPrincipal = {
  kind: 'agent';
  agentId: string;
  podId: string;
  agentName: string;
  tokenId: string;
  /** Set for an MCP host's access token (CONTRACT §20): the one grant it stands for; nothing else is served. */
  onlyGrantId?: string;
};
export type BrokerPrincipal = { kind: 'broker'; brokerId: string; tokenHash: string };
export type Principal = HumanPrincipal | AgentPrincipal | BrokerPrincipal;

/** The identity a tool call is made for: a human user (JWT `sub`) or an installed agent (its seat). */
export interface CallPrincipal {
  kind: 'user' | 'agent';
  id: string;
}
