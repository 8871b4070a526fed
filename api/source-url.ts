/**
 * Early checks on a caller's `sourceUrl`, so that a plainly unacceptable URL gets a 400
 * before any work (on the paid route, before any payment talk). They are engine/source's URL
 * rules with the operator's ports; they are not the security boundary: the fetcher checks
 * every resolved address and every redirect again at connect time.
 */

import { EngineError } from '../engine/errors.ts';
import { checkUrl } from '../engine/source/index.ts';

export interface SourceUrlOptions {
  /** Ports a media URL may name (config.sourcePorts). */
  allowedPorts: readonly number[];
}

/** A https URL whose host is a public address or a name that could be public. */
export function checkPublicHttpsUrl(raw: string, opts: SourceUrlOptions): URL {
  const url = checkUrl(raw, { mode: 'public' }, { allowLoopback: false, allowedPorts: opts.allowedPorts });
  const host = url.hostname.toLowerCase().replace(/\.$/, '');
  // A single label resolves through the resolver's search domains: inside, never public.
  if (!host.includes('.') && !host.startsWith('[')) {
    throw new EngineError('SOURCE_ADDRESS_BLOCKED', 'sourceUrl must name a public host.', { details: { host } });
  }
  return url;
}

/** A https URL on one of the service's own media hosts (the host or a subdomain of a suffix). */
export function checkMediaHostUrl(raw: string, hostSuffixes: readonly string[], opts: SourceUrlOptions): URL {
  const urlOptions = { allowLoopback: false, allowedPorts: opts.allowedPorts };
  if (hostSuffixes.length === 0) {
    // Still report a bad URL as such before saying no host is allowed.
    checkUrl(raw, { mode: 'public' }, urlOptions);
    throw new EngineError('SOURCE_HOST_NOT_ALLOWED', 'This server has no media hosts configured.');
  }
  return checkUrl(raw, { mode: 'allowlist', hostSuffixes }, urlOptions);
}
