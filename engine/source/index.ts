/**
 * engine/source: remote media, fetched safely. `SafeFetcher.open(url, options)` returns a capped,
 * timed body stream for ffmpeg's stdin; every rule that keeps a stranger's URL off our own
 * network lives below this folder. See fetcher.ts for where each rule is enforced.
 */
export { type AddressPolicyOptions, type AddressVerdict, checkAddress } from './address-policy.ts';
export {
  DEFAULT_MAX_BYTES,
  type LookupFn,
  type OpenedSource,
  SafeFetcher,
  type SafeFetcherOptions,
  SOURCE_DEFAULTS,
  type SourceOptions,
} from './fetcher.ts';
export { checkUrl, hostMatchesSuffix, normalizeHostSuffixes, type SourcePolicy } from './url-policy.ts';
