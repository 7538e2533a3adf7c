import { publicBaseUrl, type Config } from '../config';
import type { ConsoleLinks } from '../console/console-links';
import { UsageError } from './policy-eval';

/**
 * A console URL that signs in as a demo user (or any user id) once, within 10 minutes, on the
 * service's address (PUBLIC_URL, else the configured HOST and PORT, as the service says itself). The code
 * rides in the URL's fragment, which the browser never sends: it stays out of access logs,
 * proxies and Referer headers, and the console trades it for a session at once.
 */
export async function consoleLink(links: ConsoleLinks, config: Config, options: { as?: string; user?: string }): Promise<string> {
  if (config.NODE_ENV === 'production' || config.JWT_JWKS_URI) {
    throw new UsageError('console links are for development (HS256 tokens); in production sign in with OpenID Connect');
  }
  let userId = options.user;
  if (!userId) {
    if (options.as !== 'owner' && options.as !== 'member') throw new UsageError('say --as owner|member (the demo world) or --user USER_ID');
    userId = (await links.demoUser(options.as)) ?? undefined;
    if (!userId) throw new UsageError('no demo world yet: run npm run admin -- demo first');
  }
  const { code } = await links.create(userId);
  return `${publicBaseUrl(config)}/console/sign-in#code=${code}`;
}
