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
import { type AddressPolicyOptions, checkAddress, embeddedIPv4 } from './address-policy.ts';

export interface UrlPolicyOptions extends AddressPolicyOptions {
  /** Ports a URL may name (default: 443 only); `'any'` for tests whose origins listen elsewhere. */
  allowedPorts?: readonly number[] | 'any';
}

/** Names that mean this machine however they are spelled (after the URL parser's IDNA mapping). */
const LOCAL_NAMES = new Set(['localhost', 'localhost.localdomain', 'ip6-localhost', 'ip6-loopback']);

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

/**
 * Checks on the string as the caller wrote it, before the URL parser normalises it away:
 * parsers disagree on a backslash (WHATWG reads it as a slash, others as part of the host)
 * and on where an `@` ends the userinfo, which is how one URL reaches two different hosts.
 */
function checkRawUrl(raw: string): void {
  if (raw.includes('\\')) {
    throw new EngineError('SOURCE_URL_INVALID', 'A backslash is not allowed in a source URL.');
  }
  // C0 controls, space and DEL: the parser would strip or keep them, neither is canonical.
  if (/[\u0000-\u0020\u007f]/.test(raw)) {
    throw new EngineError('SOURCE_URL_INVALID', 'Whitespace and control characters are not allowed in a source URL.');
  }
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(raw);
  // Relative references (redirect targets) have their authority, if any, after `//`.
  const start = scheme ? scheme[0].length : raw.startsWith('//') ? 2 : -1;
  if (start === -1) return;
  const end = raw.slice(start).search(/[/?#]/);
  const authority = end === -1 ? raw.slice(start) : raw.slice(start, start + end);
  if (authority.includes('@')) {
    throw new EngineError('SOURCE_URL_INVALID', 'URLs with credentials (user@host) are not allowed.');
  }
}

function checkPort(url: URL, allowed: readonly number[] | 'any'): void {
  if (url.port === '') return; // the scheme's default, 443
  const port = Number(url.port);
  if (port === 0) throw new EngineError('SOURCE_URL_INVALID', 'Port 0 is not a valid port.', { details: { port } });
  if (allowed !== 'any' && !allowed.includes(port)) {
    throw new EngineError('SOURCE_PORT_NOT_ALLOWED', `Port ${port} is not allowed; media is fetched from port 443.`, {
      details: { port },
    });
  }
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
export function checkUrl(input: string | URL, policy: SourcePolicy, addressOptions: UrlPolicyOptions, base?: URL): URL {
  if (typeof input === 'string') checkRawUrl(input);
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
  checkPort(url, addressOptions.allowedPorts ?? [443]);
  const literal = isIP(host) !== 0;
  if (literal && isIP(host) === 6) {
    // One address, one spelling: an IPv6 form that carries an IPv4 address inside (mapped,
    // NAT64, 6to4, Teredo, ...) is refused even when the inner address is public.
    const inner = embeddedIPv4(host);
    if (inner !== null) {
      throw new EngineError('SOURCE_URL_INVALID', `IPv6 forms of an IPv4 address are not accepted; use ${inner}.`, {
        details: { host, ipv4: inner },
      });
    }
  }
  if (!literal && (LOCAL_NAMES.has(host) || host.endsWith('.localhost'))) {
    // Refused by name, before any DNS: whatever a resolver says about it, it means us.
    throw new EngineError('SOURCE_ADDRESS_BLOCKED', `The host ${host} is this machine.`, { details: { host } });
  }
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
