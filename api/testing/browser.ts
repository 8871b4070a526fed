/**
 * Test-only: the service as `npm start` runs it (a child process, the address read from what it
 * prints), Debian's Chromium through puppeteer-core, and a page watcher that collects console
 * errors, CSP refusals and uncaught exceptions, so a test can demand there were none.
 */

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { REPO_ROOT } from '../../test-support/fixtures.ts';
import { JFK_MP3 } from '../../test-support/media.ts';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** A real recording shipped with whisper.cpp's sources (in node_modules), not a shared fixture. */

const run = promisify(execFile);

export interface ServerProcess {
  /** The address the service printed, exactly. */
  url: string;
  /** Everything it wrote, for a failing test's message. */
  output: string[];
  stop(): Promise<void>;
}

/**
 * What the clean environment keeps of the run's: the machine's temp folder (the fresh-clone check
 * looks for what a run leaves there, the service's ffmpeg children included), the run's PulseAudio
 * folders and its compile cache (both set in vitest.config.ts).
 */
const KEPT = ['PATH', 'HOME', 'TMPDIR', 'PULSE_RUNTIME_PATH', 'PULSE_STATE_PATH', 'NODE_COMPILE_CACHE'];

/**
 * Starts `node api/server.ts` (what `npm start` runs) with `env` on top of a clean environment:
 * PORT 0 would print a port nobody asked for, so the caller passes a free one.
 */
export async function startServerProcess(env: Record<string, string>, timeoutMs = 90_000): Promise<ServerProcess> {
  const kept = Object.fromEntries(KEPT.flatMap((k) => (process.env[k] === undefined ? [] : [[k, process.env[k]]])));
  const child: ChildProcess = spawn(process.execPath, ['api/server.ts'], {
    cwd: REPO_ROOT,
    env: { HOME: '/tmp', ...kept, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  };
  const lines = createInterface({ input: child.stdout! });
  createInterface({ input: child.stderr! }).on('line', (l) => output.push(l));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no address printed in ${timeoutMs} ms`)), timeoutMs);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the service exited (${code}):\n${output.join('\n')}`));
      });
      lines.on('line', (l) => {
        output.push(l);
        const m = /https?:\/\/(?:127\.0\.0\.1|localhost|\[::1\]):\d+/.exec(l);
        if (m) {
          clearTimeout(timer);
          resolve(m[0]);
        }
      });
    });
    return { url, output, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Flags that keep a headless Chromium quiet and local; `extra` adds fake media devices and the like. */
export async function launchChromium(userDataDir: string, extra: string[] = []): Promise<Browser> {
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    // A fresh profile per run, so no cookie, cache or stored upload of an earlier run leaks in.
    userDataDir,
    args: [
      // Root in CI containers: Chromium's sandbox needs user namespaces it may not have.
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
      '--autoplay-policy=no-user-gesture-required',
      ...extra,
    ],
  });
}

/** Console errors, CSP refusals and uncaught exceptions of a page. */
export function watchPage(page: Page): { problems: string[] } {
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || /Content.Security.Policy|Refused to/i.test(m.text()))
      problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${String(e)}`));
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`);
  });
  return { problems };
}

/** A WebM (VP8 + Opus) of the JFK recording over a test pattern, and the same speech as a WAV. */
export async function makeMedia(dir: string): Promise<{ webm: string; wav: string }> {
  const webm = join(dir, 'jfk.webm');
  const wav = join(dir, 'jfk.wav');
  const base = ['-nostdin', '-v', 'error', '-y'];
  await run('ffmpeg', [
    ...base,
    ...['-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=10:duration=11', '-i', JFK_MP3],
    ...['-t', '11', '-c:v', 'libvpx', '-b:v', '200k', '-c:a', 'libopus', webm],
  ]);
  await run('ffmpeg', [...base, '-i', JFK_MP3, '-ac', '1', '-ar', '48000', '-c:a', 'pcm_s16le', wav]);
  return { webm, wav };
}

/** A port free right now: the service is told its PORT before it starts. */
export { freePort } from '../../test-support/test-services.ts';
