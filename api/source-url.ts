/**
 * Early, string-level checks on a caller's `sourceUrl`, so that a plainly unacceptable URL
 * gets a 400 before any work (or, on the paid route, before any payment talk). They are not
 * the security boundary: the engine's fetcher checks every resolved address and redirect
 * at connect time.
 */

import ipaddr from 'ipaddr.js';
import { EngineError } from '../engine/errors.ts';

function parseHttps(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new EngineError('SOURCE_URL_INVALID', 'sourceUrl is not a URL.');
  }
  if (url.protocol !== 'https:') throw new EngineError('SOURCE_SCHEME_NOT_ALLOWED', 'sourceUrl must be https.');
  if (url.username !== '' || url.password !== '') {
    throw new EngineError('SOURCE_URL_INVALID', 'sourceUrl must not carry credentials.');
  }
  return url;
}

/** A https URL whose host is a name or a public unicast address. */
export function checkPublicHttpsUrl(raw: string): URL {
  const url = parseHttps(raw);
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (ipaddr.isValid(host)) {
    const addr = ipaddr.process(host);
    // `::/96` (IPv4-compatible) reads as unicast in ipaddr.js but can reach private space.
    const v4compat = addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).toNormalizedString().startsWith('0:0:0:0:0:0:');
    if (addr.range() !== 'unicast' || v4compat) {
      throw new EngineError('SOURCE_ADDRESS_BLOCKED', 'sourceUrl points at a non-public address.');
    }
  } else if (host === 'localhost' || host.endsWith('.localhost') || !host.includes('.')) {
    throw new EngineError('SOURCE_ADDRESS_BLOCKED', 'sourceUrl must name a public host.');
  }
  return url;
}

/** A https URL on one of the service's own media hosts (exact host or a subdomain of a suffix). */
export function checkMediaHostUrl(raw: string, hostSuffixes: readonly string[]): URL {
  const url = parseHttps(raw);
  const host = url.hostname.toLowerCase();
  if (!hostSuffixes.some((s) => host === s || host.endsWith(`.${s}`))) {
    throw new EngineError('SOURCE_HOST_NOT_ALLOWED', "sourceUrl is not on this service's media hosts.", {
      details: { host },
    });
  }
  return url;
}
