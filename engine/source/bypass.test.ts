/**
 * The SSRF bypass corpus (testing/bypass-cases.ts), run for real inside a network namespace
 * that this test creates: only a loopback interface, every IPv4/IPv6 address routed to it
 * (AnyIP) and answered by the runner's wildcard listeners. A policy bug would therefore show up
 * as a counted connection, and could still not send a packet off this machine.
 *
 * Needs root and `ip netns`; without them the suite is reported as skipped, loudly.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALLOWLIST, type BypassCase, CASES, PUBLIC_V4, SELF_CHECK_ADDRESSES } from './testing/bypass-cases.ts';
import type { RunnerReport } from './testing/netns-runner.ts';
import { makeTestPki, type TestPki } from './testing/tls.ts';

const PREFIX = 'srcbypass-';
const RUNNER = join(import.meta.dirname, 'testing', 'netns-runner.ts');

function whyUnavailable(): string | undefined {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'not running as root';
  try {
    execFileSync('ip', ['netns', 'list'], { stdio: 'ignore' });
  } catch {
    return '`ip netns` is not available';
  }
  return undefined;
}

const unavailable = whyUnavailable();
if (unavailable !== undefined) {
  console.warn(
    `\n!!! SSRF bypass corpus SKIPPED (${unavailable}): ${CASES.length} cases NOT run.\n` +
      '!!! Run as root on Linux with iproute2 to exercise it.\n',
  );
}

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });

/** Removes namespaces left behind by runs that were killed (their pid is gone). */
function reapStaleNamespaces(): void {
  const list = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  for (const line of list.split('\n')) {
    const m = new RegExp(`^${PREFIX}(\\d+)\\b`).exec(line);
    if (m === null) continue;
    const pid = Number(m[1]);
    let alive = true;
    try {
      process.kill(pid, 0);
    } catch {
      alive = false;
    }
    if (!alive) ip('netns', 'del', `${PREFIX}${pid}`);
  }
}

describe.skipIf(unavailable !== undefined)('SSRF bypass corpus in a network namespace', () => {
  const ns = `${PREFIX}${process.pid}`;
  let pki: TestPki | undefined;
  let report: RunnerReport;

  beforeAll(async () => {
    reapStaleNamespaces();
    ip('netns', 'add', ns);
    ip('-n', ns, 'link', 'set', 'lo', 'up');
    ip('-n', ns, 'route', 'add', 'local', '0.0.0.0/0', 'dev', 'lo');
    ip('-n', ns, '-6', 'route', 'add', 'local', '::/0', 'dev', 'lo');
    const links = execFileSync('ip', ['-n', ns, '-o', 'link'], { encoding: 'utf8' }).trim().split('\n');
    expect(
      links.map((l) => l.split(':')[1]?.trim()),
      'the namespace must hold loopback only',
    ).toEqual(['lo']);

    pki = makeTestPki([
      'public.test',
      'public6.test',
      'rebind.test',
      '*.cdn.example.com',
      PUBLIC_V4,
      '2a00:ffff::10',
      '127.0.0.1',
    ]);
    const out = join(pki.dir, 'report.json');
    const child = spawn('ip', ['netns', 'exec', ns, process.execPath, RUNNER, pki.dir, out], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    child.stdout.on('data', (d) => {
      log += d;
    });
    child.stderr.on('data', (d) => {
      log += d;
    });
    const killer = setTimeout(() => child.kill('SIGKILL'), 100_000);
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    clearTimeout(killer);
    if (code !== 0 || !existsSync(out)) throw new Error(`netns runner failed (exit ${code}):\n${log}`);
    report = JSON.parse(readFileSync(out, 'utf8')) as RunnerReport;
  }, 120_000);

  afterAll(() => {
    try {
      ip('netns', 'del', ns);
    } catch {
      // not created
    }
    pki?.cleanup();
  });

  it('the harness sees a direct dial to any address (so zero counts below are meaningful)', () => {
    expect(report.selfCheck.map((s) => s.address)).toEqual(SELF_CHECK_ADDRESSES);
    for (const { address, seen } of report.selfCheck) expect(seen.length, address).toBe(1);
  });

  it('a resolver answering public first and private second: the private address gets zero connections', () => {
    for (const host of ['mixed.test', 'mixed-rev.test', 'mixed6.test', 'mixed-meta.test']) {
      const i = CASES.findIndex((c) => c.url === `https://${host}/ok`);
      expect(i, host).toBeGreaterThanOrEqual(0);
      expect(report.results[i]?.answer).toBe('SOURCE_ADDRESS_BLOCKED');
      // Not the private address, and not the public one either: the name is refused whole.
      expect(report.results[i]?.connections, host).toEqual([]);
    }
  });

  it('holds at least 100 blocked cases', () => {
    expect(CASES.filter((c) => c.expect !== 'OK').length).toBeGreaterThanOrEqual(100);
  });

  const label = (c: BypassCase, i: number): string =>
    `#${i} [${c.category}${c.allowlist ? `, allowlist ${ALLOWLIST.hostSuffixes.join('|')}` : ''}] ${JSON.stringify(c.url)} → ${c.expect}`;

  it.each(CASES.map((c, i) => [label(c, i), c, i] as const))('%s', (_label, c, i) => {
    const result = report.results[i];
    expect(result?.index).toBe(i);
    expect(result?.answer, result?.message).toBe(c.expect);
    const allowed = new Set(c.connections ?? []);
    // Every connection went to an address the case allows; blocked cases made none at all.
    for (const local of result?.connections ?? []) expect(allowed.has(local), `unexpected dial to ${local}`).toBe(true);
    if (c.expect === 'OK' || allowed.size > 0) expect(result?.connections.length).toBeGreaterThanOrEqual(1);
    else expect(result?.connections).toEqual([]);
  });
});

if (unavailable !== undefined) {
  describe('SSRF bypass corpus', () => {
    it.skip(`SKIPPED LOUDLY: ${unavailable} — the ${CASES.length}-case corpus needs root and ip netns`, () => {});
  });
}
