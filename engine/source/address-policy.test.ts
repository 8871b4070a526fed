import { describe, expect, it } from 'vitest';
import { checkAddress } from './address-policy.ts';
import { checkUrl, hostMatchesSuffix, normalizeHostSuffixes } from './url-policy.ts';

const denied: Array<[string, RegExp]> = [
  ['127.0.0.1', /loopback/],
  ['127.255.255.254', /loopback/],
  ['10.0.0.1', /private/],
  ['172.16.0.1', /private/],
  ['172.31.255.255', /private/],
  ['192.168.1.1', /private/],
  ['169.254.0.1', /linkLocal/],
  ['169.254.169.254', /metadata/],
  ['169.254.170.2', /metadata/],
  ['168.63.129.16', /metadata/],
  ['100.100.100.200', /metadata/],
  ['192.0.0.192', /metadata/],
  ['100.64.0.1', /carrierGradeNat/],
  ['100.127.255.255', /carrierGradeNat/],
  ['0.0.0.0', /unspecified/],
  ['0.1.2.3', /unspecified/],
  ['255.255.255.255', /broadcast/],
  ['224.0.0.1', /multicast/],
  ['239.255.255.250', /multicast/],
  ['240.0.0.1', /reserved/],
  ['192.0.0.8', /reserved/],
  ['192.0.2.10', /reserved/],
  ['198.51.100.7', /reserved/],
  ['203.0.113.9', /reserved/],
  ['198.18.0.1', /reserved/],
  ['198.19.255.254', /reserved/],
  ['192.88.99.1', /reserved/],
  ['::', /unspecified/],
  ['::1', /loopback/],
  ['fe80::1', /linkLocal/],
  ['fc00::1', /uniqueLocal/],
  ['fd12:3456::1', /uniqueLocal/],
  ['fd00:ec2::254', /metadata/],
  ['ff02::1', /multicast/],
  ['fec0::1', /SiteLocal/],
  ['100::1', /discard/],
  ['2001:db8::1', /reserved/],
  ['3fff::1', /reserved/],
  ['2001:2::1', /benchmarking/],
  ['2001:10::1', /Orchid/],
  ['5f00::1', /segmentRouting/],
  ['4000::1', /outside 2000::\/3/],
  ['::ffff:127.0.0.1', /IPv4-mapped.*loopback/],
  ['::ffff:10.0.0.1', /IPv4-mapped.*private/],
  ['::ffff:169.254.169.254', /IPv4-mapped.*metadata/],
  ['::127.0.0.1', /IPv4-compatible/],
  ['::8.8.8.8', /IPv4-compatible/],
  ['::ffff:0:127.0.0.1', /SIIT/],
  ['64:ff9b::7f00:1', /NAT64.*loopback/],
  ['64:ff9b::a9fe:a9fe', /NAT64.*metadata/],
  ['64:ff9b:1::a00:1', /local-use NAT64/],
  ['2002:7f00:1::1', /6to4/],
  ['2002:808:808::1', /6to4/],
  ['2001:0:4136:e378:8000:63bf:80ff:fffe', /Teredo/],
  ['fe80::1%lo', /not an IP/],
  ['0x7f000001', /not an IP/],
  ['127.1', /not an IP/],
  ['localhost', /not an IP/],
  ['', /not an IP/],
];

const allowed = [
  '8.8.8.8',
  '1.1.1.1',
  '100.128.0.10',
  '172.32.0.1',
  '192.169.0.1',
  '2606:4700:4700::1111',
  '2a00:1450:4001:80b::200e',
  '::ffff:8.8.8.8',
  '64:ff9b::808:808',
];

describe('checkAddress', () => {
  it.each(denied)('denies %s', (address, reason) => {
    const verdict = checkAddress(address);
    expect(verdict.allowed).toBe(false);
    if (!verdict.allowed) expect(verdict.reason).toMatch(reason);
  });

  it.each(allowed)('allows global unicast %s', (address) => {
    expect(checkAddress(address)).toEqual({ allowed: true });
  });

  it('lets the test-only loopback switch open 127.0.0.0/8 and nothing else', () => {
    const opts = { allowLoopback: true };
    expect(checkAddress('127.0.0.1', opts).allowed).toBe(true);
    expect(checkAddress('127.9.9.9', opts).allowed).toBe(true);
    expect(checkAddress('::ffff:127.0.0.1', opts).allowed).toBe(true);
    for (const other of ['::1', '10.0.0.1', '192.168.0.1', '169.254.169.254', '0.0.0.0', 'fd00::1', '::127.0.0.1']) {
      expect(checkAddress(other, opts).allowed, other).toBe(false);
    }
    // Off unless literally true: a string from some config file does not count.
    expect(checkAddress('127.0.0.1', { allowLoopback: 'true' as unknown as boolean }).allowed).toBe(false);
  });
});

describe('checkUrl', () => {
  const pub = { mode: 'public' } as const;
  const code = (fn: () => unknown): string | undefined => {
    try {
      fn();
    } catch (err) {
      return (err as { code?: string }).code;
    }
    return undefined;
  };

  it('accepts public https URLs and normalises them', () => {
    expect(checkUrl('https://Media.Example.com/a.mp4?x=1#frag', pub, {}).href).toBe(
      'https://media.example.com/a.mp4?x=1#frag',
    );
    expect(checkUrl('https://8.8.8.8/a', pub, {}).hostname).toBe('8.8.8.8');
  });

  it('refuses other schemes, credentials, junk and non-public IP literals', () => {
    expect(code(() => checkUrl('http://example.com/', pub, {}))).toBe('SOURCE_SCHEME_NOT_ALLOWED');
    expect(code(() => checkUrl('file:///etc/passwd', pub, {}))).toBe('SOURCE_SCHEME_NOT_ALLOWED');
    expect(code(() => checkUrl('https://u:p@example.com/', pub, {}))).toBe('SOURCE_URL_INVALID');
    expect(code(() => checkUrl('https://u@example.com/', pub, {}))).toBe('SOURCE_URL_INVALID');
    expect(code(() => checkUrl('not a url', pub, {}))).toBe('SOURCE_URL_INVALID');
    expect(code(() => checkUrl('https://[fe80::1%25eth0]/', pub, {}))).toBe('SOURCE_URL_INVALID');
    expect(code(() => checkUrl('https://0x7f.1/', pub, {}))).toBe('SOURCE_ADDRESS_BLOCKED');
    // An IPv6 spelling of an IPv4 address is refused as a URL before its address is judged.
    expect(code(() => checkUrl('https://[::ffff:a9fe:a9fe]/', pub, {}))).toBe('SOURCE_URL_INVALID');
  });

  it('resolves redirect targets against the current URL', () => {
    const base = new URL('https://cdn.example.com/a/b.mp4');
    expect(checkUrl('../c.mp4', pub, {}, base).href).toBe('https://cdn.example.com/c.mp4');
    expect(checkUrl('//other.example.net/x', pub, {}, base).href).toBe('https://other.example.net/x');
    expect(code(() => checkUrl('http://cdn.example.com/x', pub, {}, base))).toBe('SOURCE_SCHEME_NOT_ALLOWED');
  });

  it('applies the allow-list on label boundaries', () => {
    const policy = { mode: 'allowlist', hostSuffixes: ['cdn.example.com', '.media.example.net'] } as const;
    expect(checkUrl('https://cdn.example.com/x', policy, {}).hostname).toBe('cdn.example.com');
    expect(checkUrl('https://a.b.cdn.example.com./x', policy, {}).hostname).toBe('a.b.cdn.example.com.');
    expect(checkUrl('https://v.media.example.net/x', policy, {}).hostname).toBe('v.media.example.net');
    for (const bad of [
      'https://media.example.net/x', // leading dot: subdomains only
      'https://evilcdn.example.com/x',
      'https://cdn.example.com.evil.test/x',
      'https://example.com/x',
      'https://8.8.8.8/x',
    ]) {
      expect(
        code(() => checkUrl(bad, policy, {})),
        bad,
      ).toBe('SOURCE_HOST_NOT_ALLOWED');
    }
    expect(hostMatchesSuffix('cdn.example.com', '.cdn.example.com')).toBe(false);
  });

  it('validates allow-list suffixes', () => {
    expect(normalizeHostSuffixes(['CDN.Example.com.', '.x.org'])).toEqual(['cdn.example.com', '.x.org']);
    for (const bad of [[], [''], ['*.example.com'], ['10.0.0.1'], ['exa mple.com'], ['-x.com'], [42]]) {
      expect(
        code(() => normalizeHostSuffixes(bad as string[])),
        JSON.stringify(bad),
      ).toBe('INVALID_OPTIONS');
    }
  });
});
