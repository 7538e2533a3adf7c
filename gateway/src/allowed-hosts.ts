/**
 * The names the HTTP listener answers to in `Host` and `Origin`, so that a web page whose name is
 * made to resolve to the gateway's address (DNS rebinding) cannot drive it from a browser: the
 * page's requests carry its own name. `allowedHosts` when given; otherwise the listen address
 * itself (every loopback name on a loopback address). The host of `publicUrl` is always allowed.
 * An address that is every interface (`0.0.0.0`, `::`) names no host: it needs one of the two.
 */
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);
const EVERY_INTERFACE = new Set(['0.0.0.0', '[::]']);

/** A host as URL.hostname spells it: lower case, an IPv6 address in brackets. */
export function normalHost(host: string): string {
  const bracketed = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return hostnameOf(`http://${bracketed}`) ?? '';
}

/** Whether `host` is a bare host name or address (no port, path or user), as `allowedHosts` takes them. */
export function isBareHost(host: string): boolean {
  const bracketed = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return normalHost(host) === bracketed.toLowerCase();
}

export function hostnameOf(url: string): string | undefined {
  try {
    return new URL(url).hostname || undefined;
  } catch {
    return undefined;
  }
}

export function allowedHostsOf(listen: { host: string; publicUrl?: string; allowedHosts?: string[] }): Set<string> {
  const address = normalHost(listen.host);
  const defaults = LOOPBACK.has(address) ? [...LOOPBACK] : EVERY_INTERFACE.has(address) ? [] : [address];
  const allowed = new Set((listen.allowedHosts ?? defaults).map(normalHost).filter(Boolean));
  const publicHost = listen.publicUrl ? hostnameOf(listen.publicUrl) : undefined;
  if (publicHost) allowed.add(publicHost);
  if (allowed.size === 0)
    throw new Error(
      `listening on ${listen.host} (every interface), the gateway needs the names it answers to: listen.publicUrl or listen.allowedHosts`,
    );
  return allowed;
}
