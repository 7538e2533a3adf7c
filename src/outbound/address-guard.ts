import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Where the service may connect when someone else names the URL (a webhook target, a client's
 * metadata document): only to public unicast addresses, unless the deployment allows private ones.
 * Loopback, private, link-local (cloud metadata), unique-local, carrier-grade NAT, unspecified,
 * multicast, reserved and documentation ranges are refused, and so is an IPv6 address that
 * carries an IPv4 one (IPv4-mapped, IPv4-compatible, 6to4, Teredo, NAT64): it is judged as the
 * IPv4 it carries or, where that cannot be told, refused.
 *
 * How a fetch uses it: `resolvePublicAddresses` when the URL is accepted (a 4xx then), and for
 * each request `literalRefusal` (Node connects to a literal address without any lookup) and
 * `lookup: guardedLookup(…)`, which judges every address the name resolves to at that moment and
 * hands the socket only what it judged, so a name that resolves elsewhere later (DNS rebinding)
 * is caught when it matters.
 */
export class AddressNotAllowedError extends Error {
  constructor(readonly address: string) {
    super(`the address ${address} is not a public unicast address`);
    this.name = 'AddressNotAllowedError';
  }
}

/**
 * The IPv4 inside an IPv4-compatible IPv6 address (`::a.b.c.d`, the deprecated ::/96 of RFC 4291
 * §2.5.5.1, spelled `::7f00:1` once normalised): ipaddr.js calls those plain unicast, and a
 * host's stack may still route them to the IPv4 they carry. `::` and `::1` are in it too, and
 * judged as 0.0.0.0 and 0.0.0.1: refused.
 */
function ipv4Compatible(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const parts = address.parts;
  if (parts.slice(0, 6).some((part) => part !== 0)) return undefined;
  return new ipaddr.IPv4([parts[6]! >> 8, parts[6]! & 0xff, parts[7]! >> 8, parts[7]! & 0xff]);
}

/** Whether an address (any spelling Node or ipaddr.js reads) is public unicast. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  // process() turns an IPv4-mapped IPv6 address into the IPv4 it maps.
  const parsed = ipaddr.process(address);
  const judged = parsed.kind() === 'ipv6' ? (ipv4Compatible(parsed as ipaddr.IPv6) ?? parsed) : parsed;
  return judged.range() === 'unicast';
}

/** A URL's hostname as a bare address when it is one (`[::1]` → `::1`), else undefined. */
export function literalAddress(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isIP(bare) ? bare : undefined;
}

/**
 * The refusal of a URL whose host is a literal non-public address, else undefined: Node connects
 * to a literal without calling the lookup, so a request judges it here first.
 */
export function literalRefusal(url: URL, allowPrivate: boolean): AddressNotAllowedError | undefined {
  const literal = literalAddress(url.hostname);
  return literal && !allowPrivate && !isPublicAddress(literal) ? new AddressNotAllowedError(literal) : undefined;
}

/** Every address the name resolves to, each judged: all must pass, or the name is refused. */
export async function resolvePublicAddresses(hostname: string, allowPrivate: boolean): Promise<LookupAddress[]> {
  const literal = literalAddress(hostname);
  const addresses = literal ? [{ address: literal, family: isIP(literal) }] : await lookupAll(hostname);
  if (addresses.length === 0) throw new Error(`${hostname} resolves to no address`);
  if (!allowPrivate) {
    const refused = addresses.find((entry) => !isPublicAddress(entry.address));
    if (refused) throw new AddressNotAllowedError(refused.address);
  }
  return addresses;
}

/** How long a name may take to resolve: the system resolver has no bound of its own. */
const LOOKUP_TIMEOUT_MS = 5_000;

function lookupAll(hostname: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${hostname} did not resolve within ${LOOKUP_TIMEOUT_MS} ms`)), LOOKUP_TIMEOUT_MS);
    dnsLookup(hostname, { all: true, verbatim: true }, (error, found) => {
      clearTimeout(timer);
      if (error) reject(error);
      else resolve(found);
    });
  });
}

/**
 * The `lookup` of a guarded request's connection: resolves, judges every address, and hands the
 * socket only what was judged, so nothing resolves the name again between the check and the connect.
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    resolvePublicAddresses(hostname, allowPrivate).then(
      (addresses) => {
        if (options.all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
}
