import { ApiError } from '../kernel/errors';
import { AddressNotAllowedError, resolvePublicAddresses } from '../outbound/address-guard';

/** The longest webhook URL kept. */
export const MAX_URL_LENGTH = 2048;

/**
 * A webhook target as it is kept: an absolute http(s) URL with a host, no user name or password
 * (a credential in a URL ends up in logs), no fragment, at most MAX_URL_LENGTH characters, in
 * WHATWG-normalised form. Anything else is a 400 `webhook_url_invalid`.
 */
export function parseTargetUrl(text: string): URL {
  const refuse = (why: string): never => {
    throw new ApiError('webhook_url_invalid', why, { errors: [{ path: 'url', message: why }] });
  };
  if (text.length > MAX_URL_LENGTH) refuse(`at most ${MAX_URL_LENGTH} characters`);
  if (!URL.canParse(text)) refuse('not an absolute URL');
  const url = new URL(text);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') refuse('only http: and https: URLs');
  if (url.username || url.password) refuse('no user name or password in the URL');
  if (url.hash || text.includes('#')) refuse('no fragment');
  if (!url.hostname) refuse('a host is required');
  if (url.href.length > MAX_URL_LENGTH) refuse(`at most ${MAX_URL_LENGTH} characters once normalised`);
  return url;
}

/**
 * The target's host must resolve, now, to public addresses only (unless private ones are
 * allowed): 400 `webhook_target_not_allowed` otherwise. Deliveries judge it again.
 */
export async function checkTargetHost(url: URL, allowPrivate: boolean): Promise<void> {
  try {
    await resolvePublicAddresses(url.hostname, allowPrivate);
  } catch (error) {
    const why =
      error instanceof AddressNotAllowedError
        ? 'the host resolves to a loopback, private, link-local or otherwise non-public address'
        : 'the host does not resolve';
    throw new ApiError('webhook_target_not_allowed', why, { errors: [{ path: 'url', message: why }] });
  }
}
