/**
 * Test-only: the SSRF bypass corpus, run inside a network namespace by netns-runner.ts and
 * asserted by bypass.test.ts. Each case says what the fetcher must answer and which
 * connections the namespace's listeners may see (none, for every blocked case).
 *
 * Inside the namespace every IPv4 and IPv6 address is local (AnyIP routes on loopback) and
 * served by the runner's wildcard listeners, so a dial to any address, had one happened, would
 * have been accepted and counted. The namespace has no interface but loopback: nothing leaves.
 */

/** Addresses the namespace's resolver hands out. PUBLIC_* are globally routable by range; in
 * the namespace they are just more local addresses of the test's own listener. */
export const PUBLIC_V4 = '100.128.0.10';
export const PUBLIC_V6 = '2a00:ffff::10';
export const PUBLIC_V4_SEEN = `::ffff:${PUBLIC_V4}`;

/** The test zone: name → answers (in order). `rebind.test` is special-cased by the runner. */
export const ZONE: Record<string, string[]> = {
  'public.test': [PUBLIC_V4],
  'public6.test': [PUBLIC_V6],
  'loop.test': ['127.0.0.1'],
  'loop6.test': ['::1'],
  'private.test': ['10.0.0.1'],
  'private172.test': ['172.16.5.4'],
  'private192.test': ['192.168.1.1'],
  'meta.test': ['169.254.169.254'],
  'metadata.google.internal': ['169.254.169.254'],
  'azure.test': ['168.63.129.16'],
  'cgnat.test': ['100.64.0.1'],
  'zero.test': ['0.0.0.0'],
  'bcast.test': ['255.255.255.255'],
  'mapped.test': ['::ffff:10.0.0.1'],
  'compat.test': ['::a00:1'],
  'nat64.test': ['64:ff9b::a9fe:a9fe'],
  'sixto4.test': ['2002:a00:1::1'],
  'teredo.test': ['2001:0:4136:e378:8000:63bf:80ff:fffe'],
  'ula.test': ['fd00::1'],
  'imds6.test': ['fd00:ec2::254'],
  'linklocal6.test': ['fe80::1'],
  'doc.test': ['192.0.2.10'],
  // The case: a public answer first and a private one second.
  'mixed.test': [PUBLIC_V4, '10.0.0.1'],
  'mixed-rev.test': ['10.0.0.1', PUBLIC_V4],
  'mixed6.test': [PUBLIC_V6, '::1'],
  'mixed-meta.test': [PUBLIC_V4, PUBLIC_V6, '169.254.169.254'],
  '127.0.0.1.nip.test': ['127.0.0.1'],
  'xn--vil-9la.test': ['10.0.0.1'], // évil.test
  'cdn.example.com': ['10.0.0.1'], // an allow-listed name that points inside
  'v.cdn.example.com': [PUBLIC_V4],
};

export const ALLOWLIST = { mode: 'allowlist', hostSuffixes: ['cdn.example.com', 'public.test'] } as const;

export type Expected =
  | 'OK'
  | 'SOURCE_ADDRESS_BLOCKED'
  | 'SOURCE_URL_INVALID'
  | 'SOURCE_SCHEME_NOT_ALLOWED'
  | 'SOURCE_HOST_NOT_ALLOWED';

export interface BypassCase {
  category: string;
  url: string;
  expect: Expected;
  /** Default: the public policy. */
  allowlist?: boolean;
  /** Connections the listeners may see, by local address (default: none at all). */
  connections?: string[];
  /** Run with the test-only loopback switch (harness controls only). */
  loopbackSwitch?: boolean;
  note?: string;
}

const B = 'SOURCE_ADDRESS_BLOCKED';
const blocked = (category: string, urls: string[], note?: string): BypassCase[] =>
  urls.map((url) => ({ category, url, expect: B, ...(note === undefined ? {} : { note }) }));

const invalid = (category: string, urls: string[]): BypassCase[] =>
  urls.map((url) => ({ category, url, expect: 'SOURCE_URL_INVALID' }));

const redirectTo = (location: string, status = 302): string =>
  `https://public.test/redirect?status=${status}&to=${encodeURIComponent(location)}`;

export const CASES: BypassCase[] = [
  // Harness controls: a public answer is dialed and served, so zero counts below mean something.
  { category: 'control', url: 'https://public.test/ok', expect: 'OK', connections: [PUBLIC_V4_SEEN] },
  { category: 'control', url: 'https://public6.test/ok', expect: 'OK', connections: [PUBLIC_V6] },
  { category: 'control', url: `https://${PUBLIC_V4}/ok`, expect: 'OK', connections: [PUBLIC_V4_SEEN] },
  { category: 'control', url: `https://[${PUBLIC_V6}]/ok`, expect: 'OK', connections: [PUBLIC_V6] },
  { category: 'control', url: 'https://PUBLIC.test./ok', expect: 'OK', connections: [PUBLIC_V4_SEEN] },
  {
    category: 'control',
    url: redirectTo('/ok', 301),
    expect: 'OK',
    connections: [PUBLIC_V4_SEEN, PUBLIC_V4_SEEN],
  },
  {
    category: 'control',
    url: 'https://127.0.0.1/ok',
    expect: 'OK',
    loopbackSwitch: true,
    connections: ['::ffff:127.0.0.1'],
    note: 'loopback is served here too: only the policy stands between the fetcher and it',
  },
  {
    category: 'control',
    url: 'https://v.cdn.example.com/ok',
    expect: 'OK',
    allowlist: true,
    connections: [PUBLIC_V4_SEEN],
  },

  // DNS rebinding: the first resolution is public (and dialed), the second private (refused).
  { category: 'dns-rebinding', url: 'https://rebind.test/ok', expect: 'OK', connections: [PUBLIC_V4_SEEN] },
  { category: 'dns-rebinding', url: 'https://rebind.test/ok', expect: B, note: 'second resolution answers 10.0.0.1' },

  // Alternate IPv4 spellings (the URL parser canonicalises them; the address rule judges the result).
  ...blocked('ipv4-notation', [
    'https://2130706433/',
    'https://0x7f000001/',
    'https://0X7F000001/',
    'https://017700000001/',
    'https://0177.0.0.1/',
    'https://0x7f.0.0.1/',
    'https://0x7f.0x0.0x0.0x1/',
    'https://0177.0000.0000.0001/',
    'https://127.1/',
    'https://127.0.1/',
    'https://0x7f.1/',
    'https://0177.1/',
    'https://127.000.000.001/',
    'https://127.0.0.0x1/',
    'https://127.0.0.1./',
    'https://0x7f000001./',
    'https://127.1./',
    'https://0/',
    'https://00/',
    'https://0x0/',
    'https://2852039166/',
    'https://0xa9fea9fe/',
    'https://0251.0376.0251.0376/',
    'https://169.254.43518/',
    'https://0xa9.0xfe.0xa9.0xfe/',
    'https://167772161/',
    'https://012.0.0.1/',
    'https://0xa.0.0.1/',
    'https://10.1/',
    'https://3232235521/',
    'https://0xc0a80001/',
    'https://192.168.1/',
    'https://0300.0250.0.1/',
    'https://2886729729/',
    'https://1681915905/',
  ]),

  // Every denied IPv4 range, as a literal.
  ...blocked('ipv4-range', [
    'https://127.0.0.1/',
    'https://127.255.255.254/',
    'https://10.0.0.1/',
    'https://10.255.255.254/',
    'https://172.16.0.1/',
    'https://172.31.255.254/',
    'https://192.168.0.1/',
    'https://192.168.255.254/',
    'https://169.254.0.1/',
    'https://169.254.169.254/latest/meta-data/',
    'https://169.254.170.2/v2/credentials',
    'https://168.63.129.16/machine',
    'https://100.100.100.200/latest/meta-data/',
    'https://192.0.0.192/opc/v2/instance/',
    'https://100.64.0.1/',
    'https://100.127.255.254/',
    'https://0.0.0.0/',
    'https://0.1.2.3/',
    'https://224.0.0.1/',
    'https://239.255.255.250/',
    'https://255.255.255.255/',
    'https://240.0.0.1/',
    'https://192.0.0.8/',
    'https://192.0.2.1/',
    'https://198.51.100.1/',
    'https://203.0.113.1/',
    'https://198.18.0.1/',
    'https://198.19.255.254/',
    'https://192.88.99.1/',
    'https://127.0.0.1:8443/',
  ]),

  // IPv6 literals in denied ranges and spellings.
  ...blocked('ipv6', [
    'https://[::1]/',
    'https://[0:0:0:0:0:0:0:1]/',
    'https://[0000::1]/',
    'https://[::]/',
    'https://[::0]/',
    'https://[fe80::1]/',
    'https://[fc00::1]/',
    'https://[fd00::1]/',
    'https://[fd00:ec2::254]/latest/meta-data/',
    'https://[ff02::1]/',
    'https://[ff05::2]/',
    'https://[fec0::1]/',
    'https://[100::1]/',
    'https://[2001:db8::1]/',
    'https://[3fff::1]/',
    'https://[2001:2::1]/',
    'https://[2001:10::1]/',
    'https://[5f00::1]/',
    'https://[::1]:8443/',
  ]),

  // IPv6 forms that carry an IPv4 address: refused as URLs (the plain IPv4 form is the one
  // accepted spelling), whatever the inner address, public ones included.
  ...invalid('ipv6-embedded-ipv4', [
    'https://[::ffff:8.8.8.8]/',
    'https://[64:ff9b::808:808]/',
    'https://[2002:808:808::1]/',
    'https://[::ffff:127.0.0.1]/',
    'https://[::ffff:7f00:1]/',
    'https://[::FFFF:7F00:0001]/',
    'https://[0:0:0:0:0:ffff:127.0.0.1]/',
    'https://[::ffff:10.0.0.1]/',
    'https://[::ffff:169.254.169.254]/',
    'https://[::ffff:a9fe:a9fe]/',
    'https://[::ffff:0:127.0.0.1]/',
    'https://[::127.0.0.1]/',
    'https://[::7f00:1]/',
    'https://[::10.0.0.1]/',
    'https://[::8.8.8.8]/',
    'https://[64:ff9b::127.0.0.1]/',
    'https://[64:ff9b::a00:1]/',
    'https://[64:ff9b::169.254.169.254]/',
    'https://[64:ff9b:1::a00:1]/',
    'https://[2002:7f00:1::1]/',
    'https://[2002:a00:1::]/',
    'https://[2002:a9fe:a9fe::1]/',
    'https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/',
    'https://[2001::1]/',
  ]),

  // Credentials in the URL: refused outright, whatever the host.
  ...(
    [
      'https://user@public.test/ok',
      'https://user:pass@public.test/ok',
      'https://public.test@127.0.0.1/',
      'https://public.test:443@10.0.0.1/',
      'https://127.0.0.1%2f@public.test/',
      'https://127.0.0.1:443@public.test/',
      'https://%40@public.test/ok',
    ] as const
  ).map((url): BypassCase => ({ category: 'userinfo', url, expect: 'SOURCE_URL_INVALID' })),

  // Parser confusion: spellings parsers disagree on are refused as they were written...
  ...invalid('parser-confusion', [
    'https://@127.0.0.1/',
    'https://:@127.0.0.1/',
    'https://127.0.0.1\\@public.test/',
    'https:\\\\127.0.0.1/',
    'https://public.test\\@127.0.0.1/',
    '  https://127.0.0.1/  ',
    'https://127.0.0.1\t/',
    'https://12\n7.0.0.1/',
    'https://public.test:0/ok',
  ]),
  // ...and what the URL parser reads from the rest is what the dialer gets, and it is judged.
  ...blocked('parser-confusion', [
    'https:/127.0.0.1/',
    'https:127.0.0.1/',
    'https:///127.0.0.1/',
    'https://127.0.0.1:0443/',
    'https://%31%32%37.0.0.1/',
    'https://127.0.0.1#@public.test/',
    'https://127.0.0.1?@public.test/',
    'hTTpS://127.0.0.1/',
    'https://loc%61lhost/',
  ]),
  ...(
    ['https://127.0.0.1%00.public.test/', 'https://[::1]%2f/', 'https://1.0x7f.0.0.1/', 'https://4294967296/'] as const
  ).map((url): BypassCase => ({ category: 'parser-confusion', url, expect: 'SOURCE_URL_INVALID' })),

  // Schemes other than https.
  ...(
    [
      'http://127.0.0.1/',
      'http://public.test/ok',
      'HTTP://public.test/ok',
      'ftp://127.0.0.1/',
      'file:///etc/passwd',
      'gopher://127.0.0.1:80/_GET%20/',
      'dict://127.0.0.1:11211/stats',
      'ldap://127.0.0.1/',
      'data:text/plain,hello',
      'javascript:alert(1)',
      'ws://public.test/',
      'wss://public.test/',
      'jar:https://public.test/a.zip!/',
    ] as const
  ).map((url): BypassCase => ({ category: 'scheme', url, expect: 'SOURCE_SCHEME_NOT_ALLOWED' })),
  ...(['//127.0.0.1/', '127.0.0.1', '', 'https://', 'https://[::1'] as const).map(
    (url): BypassCase => ({ category: 'scheme', url, expect: 'SOURCE_URL_INVALID' }),
  ),

  // Unicode and IDNA: mapped to ASCII by the URL parser, then judged like any other host.
  ...blocked('idna', [
    'https://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/',
    'https://ｌｏｃａｌｈｏｓｔ/',
    'https://ᴸᴼᶜᴬᴸᴴᴼˢᵀ/',
    'https://local\u00adhost/',
    'https://local\u200bhost/',
    'https://１２７.０.０.１/',
    'https://127。0。0。1/',
    'https://127．0．0．1/',
    'https://①②⑦.0.0.1/',
    'https://⑫⑦.0.0.1/',
    'https://évil.test/',
    'https://xn--vil-9la.test/',
    'https://PRIVATE.TEST/',
    'https://private.test./',
  ]),

  // Names whose answers are not public (the address rule runs on every answer).
  ...blocked('dns-answer', [
    'https://localhost/',
    'https://LOCALHOST/',
    'https://localhost./',
    'https://loop.test/',
    'https://loop6.test/',
    'https://private.test/',
    'https://private172.test/',
    'https://private192.test/',
    'https://meta.test/latest/meta-data/',
    'https://metadata.google.internal/computeMetadata/v1/',
    'https://azure.test/',
    'https://cgnat.test/',
    'https://zero.test/',
    'https://bcast.test/',
    'https://mapped.test/',
    'https://compat.test/',
    'https://nat64.test/',
    'https://sixto4.test/',
    'https://teredo.test/',
    'https://ula.test/',
    'https://imds6.test/',
    'https://linklocal6.test/',
    'https://doc.test/',
    'https://127.0.0.1.nip.test/',
    'https://loop.test:8443/',
  ]),
  ...blocked(
    'dns-mixed-answers',
    ['https://mixed.test/ok', 'https://mixed-rev.test/ok', 'https://mixed6.test/ok', 'https://mixed-meta.test/ok'],
    'one bad answer refuses the name: neither the private nor the public address is dialed',
  ),

  // Redirects: the first hop (public) is dialed, the next is re-checked from scratch and refused.
  ...(
    [
      ['http://public.test/ok', 'SOURCE_SCHEME_NOT_ALLOWED', 302],
      ['file:///etc/passwd', 'SOURCE_SCHEME_NOT_ALLOWED', 301],
      ['https://127.0.0.1/', B, 302],
      ['https://2130706433/', B, 303],
      ['https://[::ffff:10.0.0.1]/', 'SOURCE_URL_INVALID', 307],
      ['https://private.test/', B, 308],
      ['https://meta.test/latest/meta-data/', B, 302],
      ['//10.0.0.1/', B, 302],
      ['//[::1]/', B, 301],
      ['https://localhost/', B, 302],
      ['https://mixed.test/ok', B, 302],
      ['https://user:pw@public.test/ok', 'SOURCE_URL_INVALID', 302],
    ] as const
  ).map(
    ([location, expect, status]): BypassCase => ({
      category: 'redirect',
      url: redirectTo(location, status),
      expect,
      connections: [PUBLIC_V4_SEEN],
    }),
  ),

  // The allow-list policy: names outside it are refused before DNS; names inside still obey the address rule.
  ...(
    [
      'https://evil.test/',
      `https://${PUBLIC_V4}/ok`,
      'https://cdn.example.com.evil.test/',
      'https://evilcdn.example.com/',
      'https://example.com/',
      'https://evil.test#.cdn.example.com',
      'https://127.0.0.1/',
      'https://[::1]/',
      'https://private.test/',
    ] as const
  ).map((url): BypassCase => ({ category: 'allowlist', url, expect: 'SOURCE_HOST_NOT_ALLOWED', allowlist: true })),
  { category: 'allowlist', url: 'https://cdn.example.com@evil.test/', expect: 'SOURCE_URL_INVALID', allowlist: true },
  { category: 'allowlist', url: 'https://evil.test\\.cdn.example.com', expect: 'SOURCE_URL_INVALID', allowlist: true },
  {
    category: 'allowlist',
    url: 'https://cdn.example.com/',
    expect: B,
    allowlist: true,
    note: 'listed name, private answer',
  },
  {
    category: 'allowlist',
    url: redirectTo('https://evil.test/'),
    expect: 'SOURCE_HOST_NOT_ALLOWED',
    allowlist: true,
    connections: [PUBLIC_V4_SEEN],
  },
  {
    category: 'allowlist',
    url: redirectTo('https://cdn.example.com/'),
    expect: B,
    allowlist: true,
    connections: [PUBLIC_V4_SEEN],
  },
];

/** The addresses the runner dials directly (no fetcher) to prove its listeners would see them. */
export const SELF_CHECK_ADDRESSES = [
  '127.0.0.1',
  '10.0.0.1',
  '169.254.169.254',
  '100.64.0.1',
  '0.0.0.0',
  '::1',
  'fd00::1',
  '::ffff:10.0.0.1',
  '64:ff9b::a9fe:a9fe',
  '2002:a00:1::1',
  PUBLIC_V4,
  PUBLIC_V6,
];
