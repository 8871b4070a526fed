/**
 * The URL rules that run before any DNS: one spelling per address, the operator's ports, no
 * localhost by any name, no backslash or `@` before the path. And the two DNS outcomes that
 * must read the same to a stranger: "resolves inside" and "does not resolve".
 */
import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { engineFailure } from '../../test-support/errors.ts';
import { embeddedIPv4 } from './address-policy.ts';
import { SafeFetcher } from './fetcher.ts';
import { checkUrl } from './url-policy.ts';

const PUBLIC = { mode: 'public' } as const;
const codeOf = (url: string, options = {}) => {
  try {
    checkUrl(url, PUBLIC, options);
    return 'OK';
  } catch (err) {
    return (err as { code: string }).code;
  }
};

describe('embeddedIPv4', () => {
  it.each([
    ['::ffff:8.8.8.8', '8.8.8.8'],
    ['::ffff:0:8.8.8.8', '8.8.8.8'],
    ['::8.8.8.8', '8.8.8.8'],
    ['64:ff9b::808:808', '8.8.8.8'],
    ['2002:808:808::1', '8.8.8.8'],
    ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', '8.8.8.8'],
    ['2a00:1450::1', null],
    ['::1', null],
  ])('%s carries %s', (address, inner) => {
    expect(embeddedIPv4(address)).toBe(inner);
  });
});

describe('checkUrl', () => {
  it.each([
    // Ports: 443 (written or not) only, unless the operator allows more; 0 is no port at all.
    ['https://media.example.com/a.mp3', 'OK'],
    ['https://media.example.com:443/a.mp3', 'OK'],
    ['https://media.example.com:8443/a.mp3', 'SOURCE_PORT_NOT_ALLOWED'],
    ['https://media.example.com:80/a.mp3', 'SOURCE_PORT_NOT_ALLOWED'],
    ['https://media.example.com:0/a.mp3', 'SOURCE_URL_INVALID'],
    ['https://media.example.com:65536/a.mp3', 'SOURCE_URL_INVALID'],
    // IPv6 forms of an IPv4 address, public ones included: the plain IPv4 form is the one spelling.
    ['https://[::ffff:8.8.8.8]/', 'SOURCE_URL_INVALID'],
    ['https://[::ffff:808:808]/', 'SOURCE_URL_INVALID'],
    ['https://[64:ff9b::8.8.8.8]/', 'SOURCE_URL_INVALID'],
    ['https://[2002:808:808::]/', 'SOURCE_URL_INVALID'],
    ['https://[2001:0:4136:e378:8000:63bf:f7f7:f7f7]/', 'SOURCE_URL_INVALID'],
    ['https://8.8.8.8/', 'OK'],
    ['https://[2a00:1450:4001::1]/', 'OK'],
    // localhost by name, before any resolver is asked.
    ['https://localhost/', 'SOURCE_ADDRESS_BLOCKED'],
    ['https://LOCALHOST./', 'SOURCE_ADDRESS_BLOCKED'],
    ['https://ｌｏｃａｌｈｏｓｔ/', 'SOURCE_ADDRESS_BLOCKED'],
    ['https://loc%61lhost/', 'SOURCE_ADDRESS_BLOCKED'],
    ['https://media.localhost/', 'SOURCE_ADDRESS_BLOCKED'],
    ['https://localhost.localdomain/', 'SOURCE_ADDRESS_BLOCKED'],
    ['https://ip6-localhost/', 'SOURCE_ADDRESS_BLOCKED'],
    ['https://localhost.example.com/', 'OK'],
    // Backslashes and `@` before the path; whitespace and controls.
    ['https://media.example.com\\@evil.example/', 'SOURCE_URL_INVALID'],
    ['https:\\\\media.example.com/', 'SOURCE_URL_INVALID'],
    ['https://media.example.com/a\\b.mp3', 'SOURCE_URL_INVALID'],
    ['https://@media.example.com/', 'SOURCE_URL_INVALID'],
    ['https://media.example.com@evil.example/', 'SOURCE_URL_INVALID'],
    ['https://media.example.com/a@b.mp3', 'OK'],
    ['https://media.example.com/a.mp3?from=a@b', 'OK'],
    [' https://media.example.com/', 'SOURCE_URL_INVALID'],
    ['https://media.example.com/a\tb', 'SOURCE_URL_INVALID'],
  ])('%s → %s', (url, code) => {
    expect(codeOf(url)).toBe(code);
  });

  it('takes the ports an operator allows', () => {
    expect(codeOf('https://media.example.com:8443/', { allowedPorts: [443, 8443] })).toBe('OK');
    expect(codeOf('https://media.example.com:0/', { allowedPorts: 'any' })).toBe('SOURCE_URL_INVALID');
  });

  it('checks a relative redirect target’s authority too', () => {
    const base = new URL('https://media.example.com/a');
    expect(() => checkUrl('//evil.example@10.0.0.1/', PUBLIC, {}, base)).toThrow(/credentials/);
    expect(checkUrl('/b@c', PUBLIC, {}, base).href).toBe('https://media.example.com/b@c');
  });
});

describe('SafeFetcher before and at DNS', () => {
  const asked: string[] = [];
  // The fetcher's documented resolver option: answers from a table, and records who asked.
  const lookup = async (host: string): Promise<LookupAddress[]> => {
    asked.push(host);
    if (host === 'inside.example') return [{ address: '10.1.2.3', family: 4 }];
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  };
  const fetcher = new SafeFetcher({ lookup });

  it('refuses localhost by name without asking the resolver', async () => {
    asked.length = 0;
    const err = await engineFailure(fetcher.open('https://localhost./a.mp3'));
    expect(err.code).toBe('SOURCE_ADDRESS_BLOCKED');
    expect(asked).toEqual([]);
  });

  it('answers "resolves inside" and "does not resolve" the same way', async () => {
    const inside = await engineFailure(fetcher.open('https://inside.example/a.mp3'));
    const nowhere = await engineFailure(fetcher.open('https://nowhere.example/a.mp3'));
    expect(asked).toContain('inside.example');
    expect(asked).toContain('nowhere.example');
    const shown = (e: typeof inside, host: string) => ({ ...e.toJSON(), message: e.message.replace(host, 'HOST') });
    expect(shown(inside, 'inside.example')).toEqual(shown(nowhere, 'nowhere.example'));
    expect(inside.code).toBe('SOURCE_ADDRESS_BLOCKED');
  });
});
