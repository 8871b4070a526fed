import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPcm } from '../../test-support/ffmpeg.ts';
import { fixture, hasCorpus, needsCorpus, REPO_ROOT } from '../../test-support/fixtures.ts';
import { jfkSample, SENTENCES, speech } from '../../test-support/media.ts';
import { rng } from '../../test-support/random.ts';
import { EngineError } from '../errors.ts';
import { detectSpeech, SileroVad, type SpeechSpan } from './silero.ts';

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
  // Phrase boundaries heard in the JFK clip: "And so my fellow Americans" | "ask not" … | "ask what you
  // can do" | "for your country". whisper.cpp's VAD finds the same four segments.
  const JFK_PHRASES = [
    [0.3, 2.3],
    [3.3, 4.4],
    [5.4, 7.7],
    [8.2, 10.6],
  ];

  it('finds the four phrases of the JFK sample', async () => {
    // The mp3 coding of the shipped sample leaves a 40 ms dip inside "ask not …" that the VAD may
    // cut at: spans closer than 100 ms are one phrase here (the recorded wav gives four spans, below).
    const spans = await detectSpeech(vad, await readPcm(await jfkSample('wav')));
    const phrases: SpeechSpan[] = [];
    for (const s of spans) {
      const last = phrases.at(-1);
      if (last && s.start - last.end < 0.1) last.end = s.end;
      else phrases.push({ ...s });
    }
    expect(phrases).toHaveLength(4);
    phrases.forEach((s, i) => {
      expect(s.start).toBeCloseTo(JFK_PHRASES[i]![0]!, 0);
      expect(s.end).toBeCloseTo(JFK_PHRASES[i]![1]!, 0);
    });
  });

  it.skipIf(!hasCorpus())(needsCorpus('finds the four phrases of the recorded jfk.wav as four spans'), async () => {
    const spans = await detectSpeech(vad, await readPcm(fixture('speech/jfk/jfk.wav')));
    expect(spans).toHaveLength(4);
    spans.forEach((s, i) => {
      expect(s.start).toBeCloseTo(JFK_PHRASES[i]![0]!, 0);
      expect(s.end).toBeCloseTo(JFK_PHRASES[i]![1]!, 0);
    });
  });

  it('puts every sentence, English, Spanish and German, placed between pauses, inside one speech span', async () => {
    // espeak-ng sentences at known places in faint noise: where each one's voiced part is is known to
    // the sample (espeak-ng pads its output with silence), so each must lie inside a span (its first
    // and last 50 ms aside: a rendered word fades in and out), and no span may lie wholly in a pause.
    const texts: Array<[string, string]> = [
      ...SENTENCES.en.slice(0, 3).map((t): [string, string] => [t, 'en-us']),
      ...SENTENCES.es.map((t): [string, string] => [t, 'es']),
      ...SENTENCES.de.map((t): [string, string] => [t, 'de']),
    ];
    const clips = await Promise.all(texts.map(async ([t, voice]) => readPcm(await speech(t, { voice }))));
    const rand = rng(11);
    const gap = 16000 * 1.5;
    const pcm = Float32Array.from(
      { length: clips.reduce((n, c) => n + c.length + gap, gap) },
      () => (rand() - 0.5) * 0.003,
    );
    const placed: Array<[number, number]> = [];
    let at = gap;
    for (const c of clips) {
      for (let i = 0; i < c.length; i++) pcm[at + i]! += c[i]!;
      const first = c.findIndex((x) => Math.abs(x) > 0.02);
      const last = c.findLastIndex((x) => Math.abs(x) > 0.02);
      placed.push([(at + first) / 16000, (at + last) / 16000]);
      at += c.length + gap;
    }
    const spans = await detectSpeech(vad, pcm);
    for (const [a, b] of placed) expect(inside(spans, a + 0.05, b - 0.05), `sentence at ${a.toFixed(2)} s`).toBe(true);
    for (const s of spans) expect(placed.some(([a, b]) => s.start < b && a < s.end)).toBe(true);
  });

  it.skipIf(!hasCorpus())(
    needsCorpus('puts ≥ 99 % of the reference words of the multilingual set inside speech spans'),
    async () => {
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
    },
  );

  it('gives the same spans whatever the chunk size', async () => {
    const pcm = await readPcm(await speech(SENTENCES.es.join(' '), { voice: 'es' }));
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
  });

  it.skipIf(!hasCorpus())(needsCorpus('finds no speech in a recorded clip of room tone'), async () => {
    // The "empty" clip of the multilingual set: a real room, no words.
    expect(await detectSpeech(vad, await readPcm(fixture('speech/multilingual/empty.wav')))).toEqual([]);
  });

  it('splits speech longer than maxSpeechSec at a pause', async () => {
    // The JFK sample twice, back to back, is 22 s of speech with pauses; with a 6 s cap every span obeys it.
    const jfk = await readPcm(await jfkSample('wav'));
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

describe('onnxruntime telemetry', () => {
  it('is off: a process that loads and runs the VAD leaves nothing in its TMPDIR', async () => {
    // A process of its own: onnxruntime reads the switch once, when its first session is set up,
    // and this file's own sessions set it up long ago. The variable is not handed down.
    const tmp = await mkdtemp(join(tmpdir(), 'ort-telemetry-'));
    try {
      const { ORT_DISABLE_TELEMETRY: _, ...env } = process.env;
      const script = `import { SileroVad, detectSpeech } from './engine/vad/silero.ts';
        const vad = await SileroVad.load();
        const spans = await detectSpeech(vad, new Float32Array(16000));
        await vad.close();
        console.log(JSON.stringify({ spans: spans.length, env: process.env.ORT_DISABLE_TELEMETRY }));`;
      const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
        cwd: REPO_ROOT,
        env: { ...env, TMPDIR: tmp },
      });
      // Without the switch, `left` holds `.ses` and `mat-debug-<pid>.log`, from the 1DS client inside it.
      expect({ ...JSON.parse(stdout), left: await readdir(tmp) }).toEqual({ spans: 0, env: '1', left: [] });
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  });
});
