import { createClient, type GrantBrokerClient } from '@grant-broker/client';
import { requestBaseUrl } from './output';

/**
 * Who a command acts as, and the variable that holds the token. People manage grants, approvals
 * and agents; an installed agent attenuates the grants it may use and lists its own pods. The two
 * live in separate variables so that one shell can hold both, and a refusal can name the one to set.
 */
export interface Credential {
  env: 'GRANT_BROKER_TOKEN' | 'GRANT_BROKER_AGENT_TOKEN';
  /** What the token is, as a person reads it in a hint. */
  what: string;
}

export const PERSON: Credential = { env: 'GRANT_BROKER_TOKEN', what: "a person's token (a JWT)" };
export const AGENT: Credential = { env: 'GRANT_BROKER_AGENT_TOKEN', what: "the installed agent's runtime token (art_…)" };

export function tokenSet(credential: Credential): boolean {
  return (process.env[credential.env] ?? '') !== '';
}

/**
 * The SDK's client for one credential. An unset variable still sends the request (with an empty
 * token): the service's 401 is the answer, and the refusal names the variable.
 */
export function clientFor(credential: Credential): GrantBrokerClient {
  return createClient({ baseUrl: requestBaseUrl(), token: process.env[credential.env] ?? '', retries: 1 });
}
