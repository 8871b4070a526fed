/**
 * Test and benchmark support for the VAD and the pipeline: the shared fixtures this area uses (each
 * checked against its sha256, with a clear message when the folder is missing), a small ffmpeg reader
 * for short clips, and generators of long PCM streams built from real speech.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const FIXTURES_DIR = resolve(REPO_ROOT, '../shared/fixtures');

const SHA256: Record<string, string> = {
  'speech/jfk/jfk.wav': '59dfb9a4acb36fe2a2affc14bacbee2920ff435cb13cc314a08c13f66ba7860e',
  'speech/multilingual/diarization_test.wav': '6e687fa26b82800e96b3abda710d79cf4a41152dbc33049e62c73ef26294ff4e',
  'speech/multilingual/empty.wav': '2351952138d7c74f43ae85e53fd1a8a444288577b1ddb6ba5c0190f1fd8a24b1',
  'speech/multilingual/test.wav': '79a003da951710b76da63b1220e29e16f361220429c9a024c87667d3c98946b7',
  'speech/multilingual/test_data.json': 'd8a2c3174158f00a770ee68bf7ffd6b9fc73934ca0f6a082040b43dd994973b7',
  'speech/multilingual/test_de.wav': '7c6d28430a748cee868a89c385d891f99ec383c86714b7e2dd901309b4c0144c',
  'speech/multilingual/test_es.wav': '2bd19243d1fe797bd84d62f0b6be0876d26f668f66f1243c47bccdad6c3ce5cb',
  'speech/multilingual/test_fr.wav': 'e7411e4a1b97f2c56fae07767da40aedae76bd28a32b92003383d0d38c8fe291',
  'speech/multilingual/test_it.wav': '5b6c52238937043f05dd5f628cdc0988b7e019918d23edb6df4ba3041ef50f67',
  'speech/multilingual/test_ja.wav': '4570305f10cc30b8322aea5f808c4128c0aafb8939107dee9b085c50c6207fa8',
  'speech/multilingual/test_ko.wav': 'fa3ba55b4710c5bdbdc4a9e356c056b28ab820873ed40cef8c801c99d4c6ba3a',
  'speech/multilingual/test_pt.wav': '6fe9613b6273c7e59881125255711f56bd30848ec8f9ec23b44e628956aa557a',
  'vad/silero-v6.2.0-ggml.bin': '2aa269b785eeb53a82983a20501ddf7c1d9c48e33ab63a41391ac6c9f7fb6987',
};

const verified = new Set<string>();

/** Absolute path of a shared fixture, verified once per process; throws a message that says what to do. */
export function fixture(rel: string): string {
  const sum = SHA256[rel];
  if (!sum) throw new Error(`fixture ${rel} is not listed in engine/vad/test-support.ts`);
  const path = join(FIXTURES_DIR, rel);
  if (!existsSync(FIXTURES_DIR)) {
    throw new Error(
      `The shared fixtures folder is missing: expected ${FIXTURES_DIR} (../shared/fixtures from the repo).`,
    );
  }
  if (!existsSync(path)) throw new Error(`Fixture missing: ${path}`);
  if (!verified.has(rel)) {
    const got = createHash('sha256').update(readFileSync(path)).digest('hex');
    if (got !== sum) throw new Error(`Fixture ${path} has sha256 ${got}, expected ${sum}`);
    verified.add(rel);
  }
  return path;
}

/** A short media file as 16 kHz mono f32 PCM, through the system ffmpeg (argument array, no shell). */
export function readPcm(path: string): Promise<Float32Array> {
  return new Promise((resolvePcm, reject) => {
    const args = ['-nostdin', '-v', 'error', '-i', path, '-ac', '1', '-ar', '16000', '-f', 'f32le', 'pipe:1'];
    const child = spawn('ffmpeg', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let err = '';
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`ffmpeg failed on ${path}: ${err.trim()}`));
      const buf = Buffer.concat(chunks);
      const out = new Float32Array(buf.byteLength / 4);
      new Uint8Array(out.buffer).set(buf.subarray(0, out.byteLength));
      resolvePcm(out);
    });
  });
}

/** Deterministic pseudo-random numbers (mulberry32), so generated audio is the same on every run. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface LongAudioOptions {
  /** Total length in seconds. */
  durationSec: number;
  /** Real speech clips to cycle through. */
  clips: Float32Array[];
  /** Silence (with faint noise) between clips, seconds, drawn uniformly from this range. */
  gapSec?: [number, number];
  /** Samples per yielded chunk (ffmpeg's pipe gives 64 KiB ≈ 16384 samples). */
  chunkSamples?: number;
  seed?: number;
  /** Called when the generator yields a chunk: lets a test see how far ahead the consumer has read. */
  onChunk?: (endSample: number) => void;
}

/**
 * Hours of speech-like PCM without hours of memory: real clips separated by quiet gaps, produced chunk
 * by chunk on demand. Returns the clip placements too, for checks on the transcript's times.
 */
export async function* longAudio(o: LongAudioOptions): AsyncGenerator<Float32Array> {
  const total = Math.round(o.durationSec * 16000);
  const chunk = o.chunkSamples ?? 16384;
  const rand = rng(o.seed ?? 1);
  const [gMin, gMax] = o.gapSec ?? [0.5, 3];
  let clipIdx = 0;
  let inClip: Float32Array | undefined;
  let clipPos = 0;
  let gapLeft = Math.round(16000 * 0.5);
  let produced = 0;
  while (produced < total) {
    const n = Math.min(chunk, total - produced);
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      if (inClip) {
        out[i] = inClip[clipPos++] ?? 0;
        if (clipPos >= inClip.length) {
          inClip = undefined;
          gapLeft = Math.round(16000 * (gMin + (gMax - gMin) * rand()));
        }
      } else {
        out[i] = (rand() - 0.5) * 0.002;
        if (--gapLeft <= 0) {
          inClip = o.clips[clipIdx++ % o.clips.length];
          clipPos = 0;
        }
      }
    }
    produced += n;
    o.onChunk?.(produced);
    yield out;
  }
}
