/**
 * The checks that need only the URL: syntax, scheme, userinfo, the host allow-list and the
 * address rule for IP-literal hosts (which never reach DNS, so the dialer's lookup hook never
 * sees them). Applied to the first URL and again to every redirect target.
 *
 * This is not the security boundary for names: a hostname is judged by the addresses it
 * resolves to, at connect time, in the fetcher's dialer.
 */
import { isIP } from 'node:net';
import { EngineError } from '../errors.ts';
import { type AddressPolicyOptions, checkAddress } from './address-policy.ts';

export type SourcePolicy = { mode: 'public' } | { mode: 'allowlist'; hostSuffixes: readonly string[] };

/** A host suffix as configured: a DNS name, lower case, no trailing dot, optional leading dot. */
const SUFFIX_RE = /^\.?(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

/**
 * Validates an allow-list and returns it normalised. `example.com` admits the host itself and
 * every subdomain; `.example.com` admits subdomains only. IP addresses are refused here:
 * the allow-list names the service's own media hosts.
 */
export function normalizeHostSuffixes(suffixes: readonly string[]): string[] {
  if (!Array.isArray(suffixes) || suffixes.length === 0) {
    throw new EngineError('INVALID_OPTIONS', 'An allowlist policy needs at least one host suffix.');
  }
  return suffixes.map((raw) => {
    const s = typeof raw === 'string' ? raw.trim().toLowerCase().replace(/\.$/, '') : '';
    if (!SUFFIX_RE.test(s) || isIP(s.replace(/^\./, '')) !== 0 || /^\.?[0-9.]+$/.test(s)) {
      throw new EngineError('INVALID_OPTIONS', `Not a valid host suffix: ${JSON.stringify(raw)}.`);
    }
    return s;
  });
}

export function hostMatchesSuffix(host: string, suffix: string): boolean {
  if (suffix.startsWith('.')) return host.endsWith(suffix) && host.length > suffix.length;
  return host === suffix || host.endsWith(`.${suffix}`);
}

/** The URL's hostname without IPv6 brackets and without a trailing dot. */
export function bareHost(url: URL): string {
  const h = url.hostname;
  return (h.startsWith('[') ? h.slice(1, -1) : h).replace(/\.$/, '');
}

/**
 * Parses and checks one URL (the first one or a redirect target, resolved against `base`).
 * Throws the stable source error codes; returns the parsed URL.
 */
export function checkUrl(
  input: string | URL,
  policy: SourcePolicy,
  addressOptions: AddressPolicyOptions,
  base?: URL,
): URL {
  let url: URL;
  try {
    url = typeof input === 'string' ? new URL(input, base) : new URL(input.href);
  } catch (cause) {
    throw new EngineError('SOURCE_URL_INVALID', 'The source URL could not be parsed.', { cause });
  }
  if (url.protocol !== 'https:') {
    throw new EngineError('SOURCE_SCHEME_NOT_ALLOWED', `Only https URLs are allowed, not ${url.protocol}.`, {
      details: { scheme: url.protocol.replace(/:$/, '') },
    });
  }
  // Credentials in a URL are a classic way to make a reader see one host and the client
  // another (https://trusted.example@evil.example); we never send them, so refuse them.
  if (url.username !== '' || url.password !== '') {
    throw new EngineError('SOURCE_URL_INVALID', 'URLs with credentials (user@host) are not allowed.');
  }
  const host = bareHost(url);
  if (host === '') throw new EngineError('SOURCE_URL_INVALID', 'The source URL has no host.');
  const literal = isIP(host) !== 0;
  if (policy.mode === 'allowlist') {
    const suffixes = normalizeHostSuffixes(policy.hostSuffixes);
    if (literal || !suffixes.some((s) => hostMatchesSuffix(host, s))) {
      throw new EngineError('SOURCE_HOST_NOT_ALLOWED', `The host ${host} is not an allowed media host.`, {
        details: { host },
      });
    }
  } else if (policy.mode !== 'public') {
    throw new EngineError('INVALID_OPTIONS', 'Unknown source policy mode.');
  }
  if (literal) {
    const verdict = checkAddress(host, addressOptions);
    if (!verdict.allowed) {
      throw new EngineError('SOURCE_ADDRESS_BLOCKED', `The address ${host} is not allowed (${verdict.reason}).`, {
        details: { address: host, reason: verdict.reason },
      });
    }
  }
  return url;
}
