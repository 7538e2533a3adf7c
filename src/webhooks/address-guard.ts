import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Where a webhook may be sent: only to public unicast addresses, unless WEBHOOK_ALLOW_PRIVATE.
 * Loopback, private, link-local (cloud metadata), unique-local, carrier-grade NAT, unspecified,
 * multicast, reserved and documentation ranges are refused, and so is an IPv6 address that
 * carries an IPv4 one (IPv4-mapped, 6to4, Teredo, NAT64): it is judged as the IPv4 it carries
 * or, where that cannot be told, refused. The check is on the addresses a name resolves to, at
 * creation and again at each connection (the connection goes to the address just judged), so a
 * name that resolves elsewhere later (DNS rebinding) is caught when it matters.
 */
export class AddressNotAllowedError extends Error {
  constructor(readonly address: string) {
    super(`the address ${address} is not a public unicast address`);
    this.name = 'AddressNotAllowedError';
  }
}

export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  // process() turns an IPv4-mapped IPv6 address into the IPv4 it maps.
  return ipaddr.process(address).range() === 'unicast';
}

/** A URL's hostname as a bare address when it is one (`[::1]` → `::1`), else undefined. */
export function literalAddress(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isIP(bare) ? bare : undefined;
}

/** Every address the name resolves to, each judged: all must pass, or the name is refused. */
export async function resolveAllowed(hostname: string, allowPrivate: boolean): Promise<LookupAddress[]> {
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
 * The `lookup` of a delivery's connection: resolves, judges every address, and hands the socket
 * only what was judged, so nothing resolves the name again between the check and the connect.
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    resolveAllowed(hostname, allowPrivate).then(
      (addresses) => {
        if (options.all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
}
