import * as oauth from 'oauth4webapi';
import type { ConsoleConfig, Session } from './session';

const PENDING = 'grant-broker.oidc';

interface Pending {
  verifier: string;
  state: string;
  nonce: string;
}

const redirectUri = () => `${window.location.origin}/console/callback`;

async function discover(issuer: string): Promise<oauth.AuthorizationServer> {
  const url = new URL(issuer);
  const options = { algorithm: 'oidc' as const, [oauth.allowInsecureRequests]: url.protocol === 'http:' };
  return oauth.processDiscoveryResponse(url, await oauth.discoveryRequest(url, options));
}

/**
 * OpenID Connect in the browser (oauth4webapi): authorization code with PKCE (S256), a state and
 * a nonce, for a public client. The verifier waits in sessionStorage, this tab only, for the
 * callback; nothing is stored server-side, so any replica answers the callback.
 */
export async function startSignIn(oidc: NonNullable<ConsoleConfig['oidc']>): Promise<void> {
  const as = await discover(oidc.issuer);
  if (!as.authorization_endpoint) throw new Error('the issuer publishes no authorization endpoint');
  const pending: Pending = {
    verifier: oauth.generateRandomCodeVerifier(),
    state: oauth.generateRandomState(),
    nonce: oauth.generateRandomNonce(),
  };
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  const url = new URL(as.authorization_endpoint);
  url.searchParams.set('client_id', oidc.clientId);
  url.searchParams.set('redirect_uri', redirectUri());
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('scope', 'openid');
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(pending.verifier));
  url.searchParams.set('code_challenge_method', 'S256');
  url.searchParams.set('state', pending.state);
  url.searchParams.set('nonce', pending.nonce);
  window.location.assign(url.href);
}

/**
 * The callback: checks the state, trades the code (with the PKCE verifier) for tokens and keeps
 * the ID token, which the API verifies as it verifies every human JWT (the issuer's JWKS, its
 * issuer, audience = this client).
 */
export async function finishSignIn(oidc: NonNullable<ConsoleConfig['oidc']>, currentUrl: URL): Promise<Session> {
  const pending = JSON.parse(sessionStorage.getItem(PENDING) ?? 'null') as Pending | null;
  sessionStorage.removeItem(PENDING);
  if (!pending) throw new Error('this sign-in was not started here: start again');
  const as = await discover(oidc.issuer);
  const client: oauth.Client = { client_id: oidc.clientId };
  const insecure = { [oauth.allowInsecureRequests]: new URL(oidc.issuer).protocol === 'http:' };
  const params = oauth.validateAuthResponse(as, client, currentUrl, pending.state);
  const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri(), pending.verifier, insecure);
  const result = await oauth.processAuthorizationCodeResponse(as, client, response, { expectedNonce: pending.nonce, requireIdToken: true });
  const claims = oauth.getValidatedIdTokenClaims(result);
  if (!result.id_token || !claims) throw new Error('the issuer sent no ID token');
  return { token: result.id_token, userId: claims.sub, expiresAt: new Date(claims.exp * 1000).toISOString() };
}
