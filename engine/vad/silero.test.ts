import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError } from '../errors.ts';
import { detectSpeech, SileroVad, type SpeechSpan } from './silero.ts';
import { fixture, readPcm, rng } from './test-support.ts';

interface RefWord {
  word: string;
  start_sec?: number;
  end_sec?: number;
}
interface RefClip {
  language: string;
  audio_file: string;
  words: RefWord[];
}

let vad: SileroVad;
beforeAll(async () => {
  vad = await SileroVad.load();
});
afterAll(async () => {
  await vad?.close();
});

const inside = (spans: SpeechSpan[], a: number, b: number) => spans.some((s) => s.start <= a && b <= s.end);

describe('Silero VAD (onnxruntime-node)', () => {
  it('finds the four phrases of jfk.wav', async () => {
    const pcm = await readPcm(fixture('speech/jfk/jfk.wav'));
    const spans = await detectSpeech(vad, pcm);
    // Phrase boundaries heard in the clip: "And so my fellow Americans" | "ask not" … | "ask what you
    // can do" | "for your country". whisper.cpp's VAD finds the same four segments.
    expect(spans).toHaveLength(4);
    const expected = [
      [0.3, 2.3],
      [3.3, 4.4],
      [5.4, 7.7],
      [8.2, 10.6],
    ];
    spans.forEach((s, i) => {
      expect(s.start).toBeCloseTo(expected[i]![0]!, 0);
      expect(s.end).toBeCloseTo(expected[i]![1]!, 0);
    });
  });

  it('puts ≥ 99 % of the reference words of the multilingual set inside speech spans', async () => {
    const data = JSON.parse(readFileSync(fixture('speech/multilingual/test_data.json'), 'utf8')) as {
      tests: { language_tests: RefClip[] };
    };
    let total = 0;
    let hit = 0;
    const missed: string[] = [];
    for (const clip of data.tests.language_tests) {
      const pcm = await readPcm(fixture(`speech/multilingual/${clip.audio_file}`));
      const spans = await detectSpeech(vad, pcm);
      for (const w of clip.words) {
        if (w.start_sec === undefined || w.end_sec === undefined) continue;
        total++;
        if (inside(spans, w.start_sec, w.end_sec)) hit++;
        else missed.push(`${clip.language}:${w.word}@${w.start_sec}`);
      }
    }
    expect(total).toBeGreaterThan(80);
    expect(hit / total, `words outside every span: ${missed.join(', ')}`).toBeGreaterThanOrEqual(0.99);
  });

  it('gives the same spans whatever the chunk size', async () => {
    const pcm = await readPcm(fixture('speech/multilingual/test_es.wav'));
    const whole = await detectSpeech(vad, pcm);
    for (const size of [1, 511, 513, 4000]) {
      // Size 1 exercises the partial-frame path on every sample; keep it to the first 2 s.
      const part = size === 1 ? pcm.subarray(0, 32000) : pcm;
      const stream = vad.stream();
      const got: SpeechSpan[] = [];
      for (let i = 0; i < part.length; i += size) got.push(...(await stream.push(part.subarray(i, i + size))));
      got.push(...(await stream.end()));
      expect(got).toEqual(size === 1 ? await detectSpeech(vad, part) : whole);
    }
  });

  it('finds no speech in digital silence, quiet noise, loud white noise or a pure tone', async () => {
    const n = 16000 * 20;
    const rand = rng(3);
    const silence = new Float32Array(n);
    const hiss = Float32Array.from({ length: n }, () => (rand() - 0.5) * 0.01);
    const noise = Float32Array.from({ length: n }, () => (rand() - 0.5) * 0.8);
    const tone = Float32Array.from({ length: n }, (_, i) => 0.5 * Math.sin((2 * Math.PI * 440 * i) / 16000));
    for (const pcm of [silence, hiss, noise, tone]) expect(await detectSpeech(vad, pcm)).toEqual([]);
    // The recorded "empty" clip of the multilingual set: room tone, no words.
    expect(await detectSpeech(vad, await readPcm(fixture('speech/multilingual/empty.wav')))).toEqual([]);
  });

  it('splits speech longer than maxSpeechSec at a pause', async () => {
    // jfk twice, back to back, is 22 s of speech with pauses; with a 6 s cap every span obeys it.
    const jfk = await readPcm(fixture('speech/jfk/jfk.wav'));
    const pcm = new Float32Array(jfk.length * 2);
    pcm.set(jfk);
    pcm.set(jfk, jfk.length);
    const spans = await detectSpeech(vad, pcm, { maxSpeechSec: 6, minSilenceMs: 2000 });
    expect(spans.length).toBeGreaterThan(2);
    for (const s of spans) expect(s.end - s.start).toBeLessThanOrEqual(6);
    for (let i = 1; i < spans.length; i++) expect(spans[i]!.start).toBeGreaterThanOrEqual(spans[i - 1]!.end);
  });

  it('reports bad options and misuse with stable codes', async () => {
    expect(() => vad.stream({ threshold: 1.5 })).toThrowError(EngineError);
    const s = vad.stream();
    await s.end();
    await expect(s.push(new Float32Array(10))).rejects.toMatchObject({ code: 'VAD_FAILED' });
    await expect(SileroVad.load({ modelPath: '/nonexistent.onnx' })).rejects.toMatchObject({ code: 'VAD_FAILED' });
  });
});
