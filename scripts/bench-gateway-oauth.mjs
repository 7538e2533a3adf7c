// bench:gateway's MCP host with an OAuth access token (BENCH_GATEWAY_OAUTH=1): one got as a host gets it.
import { require } from './bench-harness.mjs';

/**
 * An access token for `resource` as an MCP host gets one: registered dynamically, the pod's owner
 * consenting (through the consent endpoints, with the browser's cookies) to `everything.echo` on
 * the seeded grant for the bench's agent, the code exchanged with its PKCE verifier.
 */
export async function accessToken(base, world, resource) {
  const auth = require('@modelcontextprotocol/sdk/client/auth.js');
  const redirectUrl = 'http://127.0.0.1:9/callback';
  const metadata = await auth.discoverAuthorizationServerMetadata(base);
  const clientInformation = await auth.registerClient(base, {
    metadata,
    clientMetadata: {
      client_name: 'bench host',
      redirect_uris: [redirectUrl],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    },
  });
  const { authorizationUrl, codeVerifier } = await auth.startAuthorization(base, {
    metadata,
    clientInformation,
    redirectUrl,
    resource: new URL(resource),
    scope: 'mcp',
  });
  const cookies = new Map();
  const browse = async (url, init = {}) => {
    const headers = new Headers(init.headers);
    if (cookies.size) headers.set('cookie', [...cookies].map(([name, value]) => `${name}=${value}`).join('; '));
    const answer = await fetch(url, { ...init, headers, redirect: 'manual' });
    for (const line of answer.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair.indexOf('=');
      if (/expires=thu, 01 jan 1970/i.test(line)) cookies.delete(pair.slice(0, at));
      else cookies.set(pair.slice(0, at), pair.slice(at + 1));
    }
    return answer;
  };
  const consentPage = new URL((await browse(authorizationUrl.href)).headers.get('location'), base);
  const person = { authorization: `Bearer ${world.owner}` };
  const details = await (await browse(`${consentPage.href}/details`, { headers: person })).json();
  const agent = details.pods[0].agents[0];
  const decided = await browse(consentPage.href, {
    method: 'POST',
    headers: { ...person, 'content-type': 'application/json' },
    body: JSON.stringify({ decision: 'allow', agentId: agent.id, grantId: world.grantId, tools: ['everything.echo'] }),
  });
  let next = new URL((await decided.json()).redirectTo, base);
  while (next.origin === new URL(base).origin) next = new URL((await browse(next.href)).headers.get('location'), next);
  const tokens = await auth.exchangeAuthorization(base, {
    metadata,
    clientInformation,
    authorizationCode: next.searchParams.get('code'),
    codeVerifier,
    redirectUri: redirectUrl,
    resource: new URL(resource),
  });
  return tokens.access_token;
}
