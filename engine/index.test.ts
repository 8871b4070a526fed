/**
 * The engine's front door over its real parts: files, streams and https URLs (a real TLS origin
 * on loopback, admitted only by the test-only fetcher option), silence, abort and no-VAD parity.
 */
import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveModel } from '../models/index.ts';
import { fixture } from '../test-support/fixtures.ts';
import { decodeToPcm } from './decode/index.ts';
import { ffmpegChildren } from './decode/test-helpers.ts';
import { createEngine, type Engine } from './index.ts';
import { SafeFetcher } from './source/index.ts';
import { startOrigin, type TestOrigin } from './source/testing/origin.ts';
import { makeTestPki, type TestPki } from './source/testing/tls.ts';

const JFK = resolve(import.meta.dirname, '../../shared/fixtures/speech/jfk');
const execFileP = promisify(execFile);

let engine: Engine;
let fetcher: SafeFetcher;
let pki: TestPki;
let origin: TestOrigin;

beforeAll(async () => {
  for (const ext of ['wav', 'mp3', 'flac']) fixture(`speech/jfk/jfk.${ext}`); // present and unaltered
  pki = makeTestPki(['media.test', '127.0.0.1']);
  origin = await startOrigin({ key: pki.key, cert: pki.cert });
  const wav = await readFile(resolve(JFK, 'jfk.wav'));
  origin.routes.set('/jfk.wav', (_req, res) => {
    res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': String(wav.length) });
    res.end(wav);
  });
  // Test-only: trust the test CA and admit 127.0.0.0/8 (never reachable from configuration).
  fetcher = new SafeFetcher({ ca: pki.ca, dangerouslyAllowLoopback: true, allowedPorts: 'any' });
  const model = await resolveModel('synthetic-tiny');
  engine = await createEngine({ modelPath: model.path, threads: 1, concurrency: 2, fetcher });
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
    const fromPath = await engine.transcribe(resolve(JFK, 'jfk.wav'));
    const fromStream = await engine.transcribe({ stream: createReadStream(resolve(JFK, 'jfk.wav')) });
    const fromUrl = await engine.transcribe(`${origin.base}/jfk.wav`);
    expect(fromPath.duration).toBeCloseTo(11, 0);
    expect(fromPath.segments.length).toBeGreaterThan(0);
    expect(fromStream).toEqual(fromPath);
    expect(fromUrl).toEqual(fromPath);
  });

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
      modelPath: (await resolveModel('synthetic-tiny')).path,
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

  it('stops fetch, ffmpeg and inference on abort, with ABORTED and no ffmpeg left', async () => {
    const ac = new AbortController();
    const run = engine.transcribe(
      resolve(JFK, 'jfk.wav'),
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

  it('without VAD hands whisper.cpp the whole file, exactly as a direct addon call', async () => {
    const modelPath = (await resolveModel('synthetic-tiny')).path;
    const whole = await createEngine({ modelPath, threads: 1, vad: false });
    try {
      const viaEngine = await whole.transcribe(resolve(JFK, 'jfk.flac'));
      const pcm = await decodeToPcm({ path: resolve(JFK, 'jfk.flac') });
      const { tokens: _t, ...direct } = await whole.model.transcribe(pcm, { threads: 1 });
      expect(viaEngine).toEqual(direct);
    } finally {
      await whole.close();
    }
  });
});
