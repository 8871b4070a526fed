/**
 * Which IP addresses the fetcher may dial. One rule, applied to every DNS answer, every
 * IP-literal host and the peer address of every connected socket: only globally routable
 * unicast. Pure functions, no I/O.
 *
 * The allow rule is ipaddr.js's `range() === 'unicast'` (its special-purpose tables cover
 * loopback, private, link-local, CGNAT, unique-local, multicast, broadcast, unspecified,
 * reserved, benchmarking and documentation ranges). On top of it, explicit denies for what it
 * reads as unicast but must not be dialed, and explicit handling of IPv6 forms that carry an
 * IPv4 address inside them.
 */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export type AddressVerdict = { allowed: true } | { allowed: false; reason: string };

export interface AddressPolicyOptions {
  /** Permit 127.0.0.0/8 (and nothing else beyond the public rule). Tests only. */
  allowLoopback?: boolean;
}

// Cloud metadata and platform endpoints. Most sit inside ranges that are denied anyway
// (169.254/16, 100.64/10, 192.0.0/24, fc00::/7); Azure's wireserver is a public address,
// which is why this list exists at all. Named so that the reason reads well in logs.
const METADATA_ADDRESSES = new Set([
  '169.254.169.254', // AWS, GCP, Azure, OpenStack, DigitalOcean IMDS
  '169.254.170.2', // AWS ECS task metadata
  '168.63.129.16', // Azure wireserver (public address space)
  '100.100.100.200', // Alibaba Cloud
  '192.0.0.192', // Oracle Cloud
  'fd00:ec2::254', // AWS IMDS over IPv6
]);

// Global unicast IPv6 is 2000::/3; everything outside it is special-purpose or unassigned.
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parse('2000::');

/**
 * Decides whether `address` (a canonical IPv4 or IPv6 string, as DNS answers and the WHATWG URL
 * parser produce) may be dialed. Anything that is not a plain IP address is refused.
 */
export function checkAddress(address: string, options: AddressPolicyOptions = {}): AddressVerdict {
  // Zone ids (fe80::1%eth0) and non-canonical IPv4 spellings are never legitimate dial targets.
  if (isIP(address) === 0 || address.includes('%')) return deny(`not an IP address: ${address}`);
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    // IPv6 goes through the WHATWG parser first: ipaddr.js reads a trailing dotted quad as
    // IPv4-mapped whatever precedes it ('::127.0.0.1' came back as '::ffff:127.0.0.1'),
    // while the URL parser yields the exact hex form with no dotted quad left in it.
    parsed = ipaddr.parse(isIP(address) === 6 ? new URL(`http://[${address}]/`).hostname.slice(1, -1) : address);
  } catch {
    return deny(`not an IP address: ${address}`);
  }
  return parsed.kind() === 'ipv4' ? checkV4(parsed as ipaddr.IPv4, options) : checkV6(parsed as ipaddr.IPv6, options);
}

function checkV4(ip: ipaddr.IPv4, options: AddressPolicyOptions): AddressVerdict {
  const text = ip.toString();
  if (METADATA_ADDRESSES.has(text)) return deny('cloud metadata address');
  const range = ip.range();
  if (range === 'loopback' && options.allowLoopback === true) return { allowed: true };
  if (range !== 'unicast') return deny(`${range} IPv4 range`);
  return { allowed: true };
}

function checkV6(ip: ipaddr.IPv6, options: AddressPolicyOptions): AddressVerdict {
  if (METADATA_ADDRESSES.has(ip.toString())) return deny('cloud metadata address');
  const range = ip.range();
  // Forms that embed an IPv4 address the stack may end up dialing: judge the embedded one.
  // ::ffff:a.b.c.d is the same socket as a.b.c.d on a dual-stack host; 64:ff9b::/96 is the
  // well-known NAT64 prefix that DNS64 networks hand out for every IPv4-only site.
  if (range === 'ipv4Mapped') return embedded(ip.toIPv4Address(), 'IPv4-mapped', options);
  if (range === 'rfc6052' && ip.match(ipaddr.IPv6.parse('64:ff9b::'), 96)) {
    return embedded(lastV4(ip), 'NAT64', options);
  }
  // The rest of the embedding forms are refused outright rather than decoded: IPv4-compatible
  // (::a.b.c.d, deprecated, and ipaddr.js reads it as unicast), SIIT (::ffff:0:a.b.c.d),
  // local-use NAT64 (64:ff9b:1::/48, which a network may map anywhere), 6to4 (2002::/16) and
  // Teredo (2001::/32), whose relays would carry the packet to whatever IPv4 sits inside.
  // None of them is how a media host is legitimately published.
  if (isV4Compatible(ip)) return deny('IPv4-compatible IPv6 address');
  if (range === 'rfc6145') return deny('SIIT IPv4-translated IPv6 address');
  if (range === 'rfc6052') return deny('local-use NAT64 IPv6 address');
  if (range === '6to4') return deny('6to4 IPv6 address');
  if (range === 'teredo') return deny('Teredo IPv6 address');
  if (range !== 'unicast') return deny(`${range} IPv6 range`);
  if (!ip.match(GLOBAL_UNICAST_V6, 3)) return deny('IPv6 address outside 2000::/3');
  return { allowed: true };
}

/**
 * The IPv4 address an IPv6 address carries, when it is one of the forms that embed one
 * (IPv4-mapped, IPv4-compatible, SIIT, NAT64 in 64:ff9b::/96 or 64:ff9b:1::/48, 6to4, Teredo),
 * as a dotted quad; null for any other address.
 */
export function embeddedIPv4(address: string): string | null {
  let ip: ipaddr.IPv6;
  try {
    ip = ipaddr.IPv6.parse(new URL(`http://[${address}]/`).hostname.slice(1, -1));
  } catch {
    return null;
  }
  const range = ip.range();
  const bytes = ip.toByteArray();
  if (range === 'ipv4Mapped' || range === 'rfc6145' || range === 'rfc6052' || isV4Compatible(ip)) {
    return lastV4(ip).toString();
  }
  if (range === '6to4') return new ipaddr.IPv4(bytes.slice(2, 6)).toString();
  // Teredo keeps the client's address in the last 32 bits, inverted.
  if (range === 'teredo') return new ipaddr.IPv4(bytes.slice(12, 16).map((b) => b ^ 0xff)).toString();
  return null;
}

function embedded(v4: ipaddr.IPv4, form: string, options: AddressPolicyOptions): AddressVerdict {
  const verdict = checkV4(v4, options);
  return verdict.allowed ? verdict : deny(`${form} form of a denied IPv4 address (${verdict.reason})`);
}

function lastV4(ip: ipaddr.IPv6): ipaddr.IPv4 {
  const bytes = ip.toByteArray();
  return new ipaddr.IPv4(bytes.slice(12, 16));
}

function isV4Compatible(ip: ipaddr.IPv6): boolean {
  const parts = ip.parts;
  // ::/96 with something in the low 32 bits, other than :: and ::1 (ranges of their own).
  return parts.slice(0, 6).every((p) => p === 0) && ((parts[6] ?? 0) !== 0 || (parts[7] ?? 0) > 1);
}

function deny(reason: string): AddressVerdict {
  return { allowed: false, reason };
}
