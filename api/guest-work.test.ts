/**
 * Guests' work against everyone else's: the lanes' strict priority (unit), and through the app
 * on a real socket: guest uploads made with ffmpeg and sent by tus-js-client fill the guest
 * bounds, past which completing answers 429 GUEST_QUOTA_EXCEEDED (413 for a recording longer
 * than guests may have); with the guest lane full, a signed-in transcription, a paid call (real
 * x402 client, local facilitator) and a member's caption job start at once.
 *
 * The transcriber is a STAND-IN: caption jobs (local files) hold until told or the app closes,
 * URL jobs answer at once. What is tested is who reaches the queue when, not the engine.
 */

import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { x402Client, x402HTTPClient } from '@x402/core/client';
import { toClientEvmSigner } from '@x402/evm';
import { ExactEvmSchemeV1 } from '@x402/evm/v1';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Transcript } from '../engine/types.ts';
import { TUS_PATH } from './routes/uploads.ts';
import { LocalFacilitator } from './testing/facilitator.ts';
import { Client, PAY_TO, StandInTranscriber, startTestApp, type TestApp, testConfig } from './testing/harness.ts';
import { tusUpload } from './testing/uploads.ts';
import type { TranscribeRequest, Transcriber } from './transcriber.ts';
import { GuestQuota, WorkLanes } from './work-lanes.ts';

const run = promisify(execFile);

/** Holds every job until told; records the order jobs reached it. */
class HeldTranscriber implements Transcriber {
  started: string[] = [];
  readonly #held = new Map<string, () => void>();

  async transcribe(req: TranscribeRequest, signal: AbortSignal): Promise<Transcript> {
    this.started.push(req.sourceUrl);
    await new Promise<void>((resolve, reject) => {
      this.#held.set(req.sourceUrl, resolve);
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
    return { language: 'en', duration: 1, segments: [] };
  }

  finish(name: string): void {
    this.#held.get(name)?.();
  }

  async close(): Promise<void> {}
}

const req = (name: string): TranscribeRequest => ({
  sourceUrl: name,
  policy: { mode: 'allowlist', hostSuffixes: [] },
  wordTimestamps: false,
  maxBytes: 1,
});
const tick = () => new Promise((r) => setImmediate(r));

describe('work lanes', () => {
  it('lets no waiting guest job go ahead of paid or signed-in work', async () => {
    const inner = new HeldTranscriber();
    const lanes = new WorkLanes(inner, { guestConcurrency: 1 });
    const signal = new AbortController().signal;
    const g = ['g1', 'g2', 'g3'].map((n) => lanes.guest.transcribe(req(n), signal));
    await tick();
    expect(inner.started).toEqual(['g1']);
    const p = lanes.priority.transcribe(req('paid'), signal);
    const m = lanes.priority.transcribe(req('member'), signal);
    await tick();
    // Priority work reaches the queue at once, beside the one guest job already running.
    expect(inner.started).toEqual(['g1', 'paid', 'member']);
    inner.finish('g1');
    await g[0];
    await tick();
    // g2 waits while priority work is in flight.
    expect(inner.started).toEqual(['g1', 'paid', 'member']);
    inner.finish('paid');
    await p;
    await tick();
    expect(inner.started).toHaveLength(3);
    inner.finish('member');
    await m;
    await tick();
    expect(inner.started).toEqual(['g1', 'paid', 'member', 'g2']);
    expect(lanes.stats).toEqual({ priorityInFlight: 0, guestRunning: 1, guestWaiting: 1 });
    inner.finish('g2');
    await tick();
    inner.finish('g3');
    await Promise.all(g);
  });

  it('drops a waiting guest job whose signal fires', async () => {
    const inner = new HeldTranscriber();
    const lanes = new WorkLanes(inner, { guestConcurrency: 1 });
    const first = lanes.guest.transcribe(req('g1'), new AbortController().signal);
    const ac = new AbortController();
    const waiting = lanes.guest.transcribe(req('g2'), ac.signal);
    ac.abort(new Error('gone'));
    await expect(waiting).rejects.toThrow('gone');
    expect(lanes.stats.guestWaiting).toBe(0);
    inner.finish('g1');
    await first;
    expect(inner.started).toEqual(['g1']);
  });

  it('bounds guests by jobs and audio seconds, per network and in total', () => {
    const q = new GuestQuota({
      jobsPerNetwork: 2,
      jobsTotal: 3,
      audioSecPerNetwork: 100,
      audioSecTotal: 150,
      maxDurationSec: 60,
      retryAfterSec: 7,
    });
    const a1 = q.enter('a', 10);
    q.enter('a', 10);
    expect(() => q.enter('a', 10)).toThrow(expect.objectContaining({ code: 'GUEST_QUOTA_EXCEEDED', statusCode: 429 }));
    a1();
    a1(); // idempotent
    q.enter('a', 10);
    expect(() => q.enter('b', 61)).toThrow(
      expect.objectContaining({ code: 'GUEST_DURATION_EXCEEDED', statusCode: 413 }),
    );
    q.enter('b', 60);
    expect(() => q.enter('c', 1)).toThrow(
      expect.objectContaining({ details: expect.objectContaining({ bound: 'jobsTotal' }) }),
    );
    const audio = new GuestQuota({
      jobsPerNetwork: 10,
      jobsTotal: 10,
      audioSecPerNetwork: 100,
      audioSecTotal: 150,
      maxDurationSec: 60,
      retryAfterSec: 7,
    });
    audio.enter('a', 60);
    expect(() => audio.enter('a', 60)).toThrow(
      expect.objectContaining({ details: expect.objectContaining({ bound: 'audioSecPerNetwork' }) }),
    );
    audio.enter('b', 60);
    expect(() => audio.enter('c', 60)).toThrow(
      expect.objectContaining({ details: expect.objectContaining({ bound: 'audioSecTotal' }) }),
    );
  });
});

describe('guest bounds through the app', () => {
  let dir: string;
  let clip: Buffer;
  let longClip: Buffer;
  let t: TestApp;
  let port: number;
  let facilitator: LocalFacilitator;
  const held = new HeldTranscriber();
  const standIn = new StandInTranscriber();
  // Guests' caption jobs read local files and are held; URL jobs (signed-in, paid) answer at once.
  const transcriber: Transcriber = {
    transcribe: (r, signal) => (r.sourcePath ? held.transcribe(r, signal) : standIn.transcribe(r, signal)),
    close: async () => {},
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'guest-work-'));
    const tone = async (name: string, seconds: number) => {
      const out = join(dir, name);
      await run('ffmpeg', [
        '-nostdin',
        '-v',
        'error',
        '-f',
        'lavfi',
        '-i',
        `sine=duration=${seconds}`,
        '-c:a',
        'libopus',
        '-y',
        out,
      ]);
      return readFile(out);
    };
    clip = await tone('short.webm', 2);
    longClip = await tone('long.webm', 8);
    facilitator = await new LocalFacilitator().start();
    t = await startTestApp(
      testConfig({
        DATA_DIR: join(dir, 'data'),
        GUEST_JOBS_PER_NETWORK: '2',
        GUEST_JOBS_MAX: '3',
        GUEST_MAX_DURATION_SEC: '5',
        RATE_LIMIT_MAX: '1000',
        X402_PAY_TO: PAY_TO,
        X402_FACILITATOR_URL: facilitator.url,
        PUBLIC_URL: 'http://agent.example.test',
      }),
      { transcriber },
    );
    port = Number(new URL(await t.app.listen({ port: 0, host: '127.0.0.1' })).port);
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await facilitator?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A guest's upload from `ip`, sent by tus-js-client; resolves with the complete call's answer. */
  async function guestUpload(ip: string, bytes = clip) {
    const guest = new Client(t.app);
    const init = await guest.request({
      method: 'POST',
      url: '/api/videos/multipart/init',
      remoteAddress: ip,
      payload: {},
    });
    expect(init.statusCode, init.body).toBe(200);
    const up = init.json<{ videoId: string; guestToken: string; tus: { headers: Record<string, string> } }>();
    await tusUpload(`http://127.0.0.1:${port}${TUS_PATH}`, up.tus.headers, bytes);
    const complete = () =>
      guest.request({
        method: 'POST',
        url: '/api/videos/multipart/complete',
        remoteAddress: ip,
        payload: { videoId: up.videoId, guestToken: up.guestToken },
      });
    return { res: await complete(), complete };
  }

  it('answers 429 past the guest bounds and 413 past their length, and priority work starts at once', async () => {
    const firstGuest = await guestUpload('10.80.0.1');
    expect(firstGuest.res.statusCode).toBe(200);
    expect((await guestUpload('10.80.0.1')).res.statusCode).toBe(200);
    // A third from the same network: over its bound, visibly, and the upload stays completable.
    const third = await guestUpload('10.80.0.1');
    expect(third.res.statusCode).toBe(429);
    expect(third.res.json()).toMatchObject({ code: 'GUEST_QUOTA_EXCEEDED', details: { bound: 'jobsPerNetwork' } });
    expect(Number(third.res.headers['retry-after'])).toBeGreaterThan(0);
    expect((await guestUpload('10.80.1.1')).res.statusCode).toBe(200);
    // Three guest jobs in all: a fourth network is refused by the total.
    const fourth = await guestUpload('10.80.2.1');
    expect(fourth.res.statusCode).toBe(429);
    expect(fourth.res.json().details.bound).toBe('jobsTotal');
    // Longer than a guest may have.
    const long = await guestUpload('10.80.3.1', longClip);
    expect(long.res.statusCode).toBe(413);
    expect(long.res.json()).toMatchObject({ code: 'GUEST_DURATION_EXCEEDED', details: { maxDurationSec: 5 } });

    // One guest job holds the worker, two wait in the lane.
    expect(held.started).toHaveLength(1);

    // A signed-in transcription starts at once and finishes.
    const user = new Client(t.app);
    await user.signUp('member@example.com');
    const signedIn = await user.request({
      method: 'POST',
      url: '/api/transcribe',
      csrf: true,
      payload: { sourceUrl: 'https://media.example.test/talk.mp3' },
    });
    expect(signedIn.statusCode, signedIn.body).toBe(200);

    // And so does a paid call.
    const account = privateKeyToAccount(generatePrivateKey());
    const payer = new x402Client().registerV1('base-sepolia', new ExactEvmSchemeV1(toClientEvmSigner(account)));
    const httpPayer = new x402HTTPClient(payer);
    const url = `http://127.0.0.1:${port}/api/agent/transcribe`;
    const body = JSON.stringify({ sourceUrl: 'https://media.example.com/talk.mp3' });
    const first = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(first.status).toBe(402);
    const required = httpPayer.getPaymentRequiredResponse((n) => first.headers.get(n), await first.json());
    const payment = httpPayer.encodePaymentSignatureHeader(await payer.createPaymentPayload(required))['X-PAYMENT']!;
    const paid = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-payment': payment },
      body,
    });
    expect(paid.status, await paid.clone().text()).toBe(200);
    expect(standIn.calls.map((c) => c.sourceUrl)).toEqual([
      'https://media.example.test/talk.mp3',
      'https://media.example.com/talk.mp3',
    ]);
    // A member's upload gets its captions started at once too (their caption jobs are theirs, not
    // the guests': no 503 however many guests wait).
    const up = await user.request({ method: 'POST', url: '/api/videos/multipart/init', csrf: true, payload: {} });
    expect(up.statusCode).toBe(200);
    await tusUpload(`http://127.0.0.1:${port}${TUS_PATH}`, up.json().tus.headers, clip);
    const done = await user.request({
      method: 'POST',
      url: '/api/videos/multipart/complete',
      csrf: true,
      payload: { videoId: up.json().videoId },
    });
    expect(done.statusCode, done.body).toBe(200);
    expect(done.json().captionStatus).toBe('processing');
    // It reached the worker beside the running guest job; the two guests still waiting did not.
    await vi.waitFor(() => expect(held.started).toEqual([expect.any(String), `file:${up.json().videoId}`]));

    // When the running guest job and the member's end, the next guest goes, and a refused guest can
    // complete again.
    held.finish(held.started[0]!);
    held.finish(held.started[1]!);
    await t.app.dataPlane.jobs.settled(firstGuest.res.json().id);
    await t.app.dataPlane.jobs.settled(up.json().videoId);
    await vi.waitFor(() => expect(held.started).toHaveLength(3));
    const retried = await third.complete();
    expect(retried.statusCode).toBe(200);
  });
});
