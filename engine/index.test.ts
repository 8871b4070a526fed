/**
 * The engine's front door over its real parts: files, streams and https URLs (a real TLS origin
 * on loopback, admitted only by the test-only fetcher option), silence, abort and no-VAD parity.
 * The subject is the plumbing: synthetic-micro, with flash attention (`load.flashAttn`), which makes
 * its encoder pass a third as costly as without.
 */
import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { PassThrough, Readable } from 'node:stream';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveModel } from '../models/index.ts';
import { codeOf } from '../test-support/errors.ts';
import { ffmpegChildren } from '../test-support/ffmpeg.ts';
import { jfkSample } from '../test-support/media.ts';
import { createEngine, type Engine } from './index.ts';
import { SafeFetcher } from './source/index.ts';
import { startOrigin, type TestOrigin } from './source/testing/origin.ts';
import { makeTestPki, type TestPki } from './source/testing/tls.ts';

const JFK_WAV = await jfkSample('wav');
/** The models' load options: flash attention on (the CPU default is off, for whisper-cli parity). */
const FLASH = { useGpu: false, flashAttn: true } as const;
const execFileP = promisify(execFile);

let engine: Engine;
let fetcher: SafeFetcher;
let pki: TestPki;
let origin: TestOrigin;

beforeAll(async () => {
  pki = makeTestPki(['media.test', '127.0.0.1']);
  origin = await startOrigin({ key: pki.key, cert: pki.cert });
  const wav = await readFile(JFK_WAV);
  origin.routes.set('/jfk.wav', (_req, res) => {
    res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': String(wav.length) });
    res.end(wav);
  });
  // Test-only: trust the test CA and admit 127.0.0.0/8 (never reachable from configuration).
  fetcher = new SafeFetcher({ ca: pki.ca, dangerouslyAllowLoopback: true, allowedPorts: 'any' });
  const model = await resolveModel('synthetic-micro');
  engine = await createEngine({ modelPath: model.path, load: FLASH, threads: 1, concurrency: 2, fetcher });
});

afterAll(async () => {
  await engine?.close();
  await fetcher?.close();
  await origin?.close();
  pki?.cleanup();
});

describe('createEngine().transcribe', () => {
  it('gives the same transcript for a path, a stream and an https URL of the same speech', async () => {
    // WAV: an mp3 read from a file gets ffmpeg's gapless trim, one from a pipe does not (≈19 ms apart).
    // What is compared is the source plumbing, not decoding: no temperature fallback (a random-weight
    // model would otherwise decode each window six times over).
    const once = { temperatureIncrement: 0 };
    const fromPath = await engine.transcribe(JFK_WAV, once);
    const fromStream = await engine.transcribe({ stream: createReadStream(JFK_WAV) }, once);
    const fromUrl = await engine.transcribe(`${origin.base}/jfk.wav`, once);
    expect(fromPath.duration).toBeCloseTo(11, 0);
    expect(fromPath.segments.length).toBeGreaterThan(0);
    expect(fromStream).toEqual(fromPath);
    expect(fromUrl).toEqual(fromPath);
  }, 120_000);

  it('gives zero segments for 40 s of silence without calling the model', async () => {
    const { stdout } = await execFileP(
      'ffmpeg',
      [
        '-hide_banner',
        '-loglevel',
        'error',
        '-f',
        'lavfi',
        '-i',
        'anullsrc=r=16000:cl=mono',
        '-t',
        '40',
        '-f',
        'wav',
        '-',
      ],
      { encoding: 'buffer', maxBuffer: 8 << 20 },
    );
    let asrProgress = 0;
    const t = await engine.transcribe(
      { stream: Readable.from([stdout]) },
      {},
      { onProgress: (p) => void (p.stage === 'asr' && asrProgress++) },
    );
    expect(t.segments).toEqual([]);
    expect(t.duration).toBeCloseTo(40, 1);
    expect(asrProgress).toBe(0);
  });

  it('refuses a host outside the allow-list before connecting', async () => {
    const allowOnly = await createEngine({
      modelPath: (await resolveModel('synthetic-micro')).path,
      fetcher,
      sourcePolicy: { mode: 'allowlist', hostSuffixes: ['cdn.example.com'] },
    });
    try {
      const before = origin.connections.length;
      await expect(allowOnly.transcribe(`${origin.base}/jfk.wav`)).rejects.toMatchObject({
        code: 'SOURCE_HOST_NOT_ALLOWED',
      });
      expect(origin.connections.length).toBe(before);
    } finally {
      await allowOnly.close();
    }
  });

  it('closes the origin connection and a caller stream when it fails before decoding starts', async () => {
    const held = new Promise<void>((resolveHeld, rejectHeld) => {
      origin.routes.set('/held.wav', (_req, res) => {
        // Headers and a few bytes, then nothing: only the client can end this response.
        res.writeHead(200, { 'content-type': 'audio/wav' });
        res.write(Buffer.alloc(64));
        res.on('close', () => (res.writableEnded ? rejectHeld(new Error('the origin ended it')) : resolveHeld()));
      });
    });
    expect(await codeOf(engine.transcribe(`${origin.base}/held.wav`, { threads: 0 }))).toBe('INVALID_OPTIONS');
    // Without the fix the body stays open, this never settles and the test times out.
    await held;

    const stream = new PassThrough();
    stream.write(Buffer.alloc(64));
    expect(await codeOf(engine.transcribe({ stream }, { threads: 0 }))).toBe('INVALID_OPTIONS');
    expect(stream.destroyed).toBe(true);
  }, 20_000);

  it('stops fetch, ffmpeg and inference on abort, with ABORTED and no ffmpeg left', async () => {
    const ac = new AbortController();
    const run = engine.transcribe(
      JFK_WAV,
      {},
      {
        signal: ac.signal,
        onProgress: (p) => {
          if (p.stage === 'asr') ac.abort(new Error('caller left'));
        },
      },
    );
    await expect(run).rejects.toMatchObject({ code: 'ABORTED' });
    expect(await ffmpegChildren()).toEqual([]);
  });

  it('without VAD streams 30 s windows, silence included: the model never holds more than a window', async () => {
    const modelPath = (await resolveModel('synthetic-micro')).path;
    const noVad = await createEngine({ modelPath, load: FLASH, threads: 1, concurrency: 1, vad: false });
    // 70 s: the JFK sample looped. A spy on the real model: the windows it is handed are the observable.
    const seen: number[] = [];
    const transcribe = noVad.model.transcribe.bind(noVad.model);
    noVad.model.transcribe = (pcm, opts, run) => {
      seen.push(pcm.length / 16000);
      return transcribe(pcm, opts, run);
    };
    try {
      const { stdout } = await execFileP(
        'ffmpeg',
        ['-hide_banner', '-loglevel', 'error', '-stream_loop', '6', '-i', JFK_WAV].concat([
          '-t',
          '70',
          '-ac',
          '1',
          '-ar',
          '16000',
          '-f',
          'wav',
          '-',
        ]),
        { encoding: 'buffer', maxBuffer: 8 << 20 },
      );
      // The windows are the observable, not what is decoded in them: no temperature fallback.
      const t = await noVad.transcribe({ stream: Readable.from([stdout]) }, { temperatureIncrement: 0 });
      expect(t.duration).toBeCloseTo(70, 1);
      expect(seen.map((s) => Math.round(s))).toEqual([30, 30, 10]);
      expect(t.segments.length).toBeGreaterThan(0);
      for (const s of t.segments) {
        expect(s.start).toBeGreaterThanOrEqual(0);
        expect(s.end).toBeLessThanOrEqual(70.01);
      }
    } finally {
      await noVad.close();
    }
  }, 180_000);
});
